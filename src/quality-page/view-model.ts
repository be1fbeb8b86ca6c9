// What the page (and the HTML report) shows of one run: the battery's own summary, folded
// from 188 sub-tests to NIST's 15 tests, with each test's acceptance band. Nothing here
// recomputes a verdict: flags, criteria and uniformity come from the battery as stored.
import type { RunRow } from '../quality/store.js';
import { NIST_TEST_NAMES } from '../sts/report.js';
import type { BatterySummary, QualityCriteria, RepetitionReport, SubTestSummary, TestName, UniformityVerdict } from '../sts/types.js';

/** One sub-test, as the page's tables list it. */
export interface SubTestView {
  test: TestName;
  label: string;
  histogram: number[];
  passed: number;
  sampleSize: number;
  uniformityP: number | null;
  uniformityAssessed: boolean;
  uniformityOk: boolean;
  proportionOk: boolean;
}

/** One of the 15 tests, its sub-tests folded together. */
export interface TestView {
  test: TestName;
  /** NIST's name (finalAnalysisReport.txt). */
  name: string;
  subTests: number;
  /** C1..C10 summed over the sub-tests: every P-value of the test. */
  histogram: number[];
  /** Proportion of passing sequences of each sub-test (null when none applied), in NIST's order. */
  proportions: (number | null)[];
  /** Per sub-test: the battery found its proportion outside NIST's range (NIST's "*"). */
  outside: boolean[];
  /** The sub-test with the lowest proportion: its passes and sample size. */
  lowest: { label: string; passed: number; sampleSize: number } | null;
  /** NIST's acceptance band p̂ ± 3·sqrt(p̂(1−p̂)/m), p̂ = 1 − alpha, m = the sub-tests' sample size. */
  band: [number, number] | null;
  /** The lowest P-value of uniformity among its sub-tests (null when none could be computed). */
  uniformityP: number | null;
  uniformity: UniformityVerdict;
  uniformityReason: string;
  /** Sub-tests outside the band or judged not uniform. */
  flagged: number;
}

/** SP 800-90B min-entropy of the run's bytes (issue 15), when the run carries it. */
export interface MinEntropyView {
  assessed: number | null;
  original: number | null;
  bitstring: number | null;
}

export interface RunView {
  /** Run id in the store; null for a file tested with `qentropy sts`. */
  id: number | null;
  status: 'completed' | 'error';
  error: string | null;
  source: string;
  started: string | null;
  completed: string | null;
  streams: number;
  bitsPerStream: number;
  alpha: number;
  criteria: QualityCriteria | null;
  repetition: RepetitionReport | null;
  minEntropy: MinEntropyView | null;
  tests: TestView[];
  subTests: SubTestView[];
  keptBits: number;
}

/** The parts of a stored report (or of `qentropy sts`'s result) the view is made from. */
export interface RunViewInput {
  id?: number | null;
  status?: string;
  error?: string;
  source?: string;
  started?: string;
  completed?: string;
  layout?: { streams: number; bitsPerStream: number };
  alpha?: number;
  criteria?: QualityCriteria;
  subTests?: SubTestSummary[];
  uniformity?: BatterySummary['uniformity'];
  repetition?: RepetitionReport;
  keptBits?: number;
  min_entropy?: unknown;
}

/** The significance level of the service's runs (the battery's, NIST's default). */
const SERVICE_ALPHA = 0.01;

/** NIST's band around the expected proportion 1 − alpha for m sequences (SP 800-22 §4.2.1). */
export function acceptanceBand(alpha: number, m: number): [number, number] {
  const p = 1 - alpha;
  const half = 3 * Math.sqrt((p * (1 - p)) / m);
  return [p - half, p + half];
}

function finite(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * Min-entropy as issue 15 stores it: `min_entropy: {h_original, h_bitstring, h_assessed}`
 * (a bare number is read as the assessed value). Absent or unreadable: null.
 */
export function readMinEntropy(value: unknown): MinEntropyView | null {
  if (typeof value === 'number') return Number.isFinite(value) ? { assessed: value, original: null, bitstring: null } : null;
  if (value === null || typeof value !== 'object') return null;
  const o = value as Record<string, unknown>;
  const view = {
    assessed: finite(o.h_assessed ?? o.assessed),
    original: finite(o.h_original ?? o.original),
    bitstring: finite(o.h_bitstring ?? o.bitstring),
  };
  return view.assessed === null && view.original === null && view.bitstring === null ? null : view;
}

function foldTest(test: TestName, subs: SubTestSummary[], alpha: number, verdict: BatterySummary['uniformity'][number] | undefined): TestView {
  const histogram = Array.from({ length: 10 }, (_, i) => subs.reduce((sum, st) => sum + (st.histogram[i] ?? 0), 0));
  const proportions = subs.map((st) => (st.sampleSize > 0 ? st.passed / st.sampleSize : null));
  let lowest: TestView['lowest'] = null;
  for (const st of subs) {
    if (st.sampleSize === 0) continue;
    if (!lowest || st.passed / st.sampleSize < lowest.passed / lowest.sampleSize) {
      lowest = { label: st.label, passed: st.passed, sampleSize: st.sampleSize };
    }
  }
  const sizes = subs.map((st) => st.sampleSize).filter((k) => k > 0);
  const pValues = subs.map((st) => st.uniformityP).filter((p): p is number => p !== null);
  return {
    test,
    name: NIST_TEST_NAMES[test],
    subTests: subs.length,
    histogram,
    proportions,
    outside: subs.map((st) => st.sampleSize > 0 && !st.proportionOk),
    lowest,
    band: sizes.length ? acceptanceBand(alpha, Math.min(...sizes)) : null,
    uniformityP: pValues.length ? Math.min(...pValues) : null,
    uniformity: verdict?.verdict ?? 'excluded',
    uniformityReason: verdict?.reason ?? '',
    flagged: subs.filter(isFlagged).length,
  };
}

/** NIST's "*" on either column: outside the proportion band, or judged and not uniform. */
export function isFlagged(st: Pick<SubTestSummary, 'proportionOk' | 'sampleSize' | 'uniformityAssessed' | 'uniformityOk'>): boolean {
  return (st.sampleSize > 0 && !st.proportionOk) || (st.uniformityAssessed && !st.uniformityOk);
}

export function buildRunView(input: RunViewInput): RunView {
  const alpha = input.alpha ?? 0.01;
  const subTests = input.subTests ?? [];
  const order: TestName[] = [];
  for (const st of subTests) if (!order.includes(st.test)) order.push(st.test);
  const tests = order.map((test) =>
    foldTest(
      test,
      subTests.filter((st) => st.test === test),
      alpha,
      input.uniformity?.find((u) => u.test === test),
    ),
  );
  return {
    id: input.id ?? null,
    status: input.status === 'error' || !input.criteria ? 'error' : 'completed',
    error: input.error ?? (input.criteria ? null : 'no battery result stored'),
    source: input.source ?? 'unknown',
    started: input.started ?? null,
    completed: input.completed ?? null,
    streams: input.layout?.streams ?? 0,
    bitsPerStream: input.layout?.bitsPerStream ?? 0,
    alpha,
    criteria: input.criteria ?? null,
    repetition: input.repetition ?? null,
    minEntropy: readMinEntropy(input.min_entropy),
    tests,
    subTests: subTests.map((st) => ({
      test: st.test,
      label: st.label,
      histogram: st.histogram,
      passed: st.passed,
      sampleSize: st.sampleSize,
      uniformityP: st.uniformityP,
      uniformityAssessed: st.uniformityAssessed,
      uniformityOk: st.uniformityOk,
      proportionOk: st.proportionOk,
    })),
    keptBits: input.keptBits ?? 0,
  };
}

/** One run on the page's timeline (and in its live events). */
export interface TimelineRun {
  id: number;
  /** Completion time, Unix milliseconds. */
  time: number;
  status: 'completed' | 'error';
  /** tests_passed; null for an error run. */
  passed: boolean | null;
  nist: boolean | null;
  uniformity: boolean | null;
  nistRate: number | null;
  /** NIST's minimum pass proportion for the run's number of results (alpha 0.01): the line nistRate must reach. */
  nistMinimum: number | null;
  uniformityRate: number | null;
  strict: boolean;
  loose: boolean;
  repetition: boolean;
  error: string | null;
  keptBits: number;
}

export function timelineRun(row: RunRow): TimelineRun {
  const r = row.record;
  return {
    id: row.id,
    time: row.completedMs,
    status: row.status,
    passed: r ? r.tests_passed : null,
    nist: r ? r.nist_all_passed : null,
    uniformity: r ? r.uniformity_all_passed : null,
    nistRate: r ? finite(r.nist_success_rate) : null,
    nistMinimum: r && r.nist_passes + r.nist_fails > 0 ? acceptanceBand(SERVICE_ALPHA, r.nist_passes + r.nist_fails)[0] : null,
    uniformityRate: r ? finite(r.uniformity_success_rate) : null,
    strict: row.strictlyFailing,
    loose: row.looselyFailing,
    repetition: row.repetitionFlagged,
    error: row.error,
    keptBits: row.dataBits,
  };
}
