// Output of a battery run: the text report shaped like NIST's finalAnalysisReport.txt
// (sts-2.1.2's columns, flags and footer, byte for byte where NIST defines them) followed
// by our criteria block, and the JSON of product.md §5.4.
import type { BatteryResult, BatterySummary, SubTestSummary, TestName } from './types.js';

/** NIST's names in finalAnalysisReport.txt. */
export const NIST_TEST_NAMES: Record<TestName, string> = {
  frequency: 'Frequency',
  block_frequency: 'BlockFrequency',
  cumulative_sums: 'CumulativeSums',
  runs: 'Runs',
  longest_run: 'LongestRun',
  rank: 'Rank',
  fft: 'FFT',
  non_overlapping_template: 'NonOverlappingTemplate',
  overlapping_template: 'OverlappingTemplate',
  universal: 'Universal',
  approximate_entropy: 'ApproximateEntropy',
  random_excursions: 'RandomExcursions',
  random_excursions_variant: 'RandomExcursionsVariant',
  serial: 'Serial',
  linear_complexity: 'LinearComplexity',
};

const RULE = '-'.repeat(78);
const DASHES = '- '.repeat(40).trimEnd();

function isExcursion(test: TestName): boolean {
  return test === 'random_excursions' || test === 'random_excursions_variant';
}

/** One line of the table, in assess's printf formats. */
export function reportLine(st: SubTestSummary): string {
  let line = st.histogram.map((c) => `${String(c).padStart(3)} `).join('');
  if (st.uniformityP === null) line += '    ----    ';
  else line += ` ${st.uniformityP.toFixed(6).padStart(8)} ${st.uniformityP < 0.0001 ? '*' : ' '} `;
  const name = NIST_TEST_NAMES[st.test];
  if (st.sampleSize === 0) line += ` ------     ${name}`;
  else line += `${String(st.passed).padStart(4)}/${String(st.sampleSize).padEnd(4)} ${st.proportionOk ? ' ' : '*'}  ${name}`;
  return line;
}

/** assess's "approximately = N": the minimum pass count, truncated. */
function minimumPassCount(k: number, alpha: number): number {
  const rate = 1 - alpha - 3 * Math.sqrt((alpha * (1 - alpha)) / k);
  return Math.trunc(rate * k);
}

function fmtRate(x: number | null): string {
  return x === null ? 'n/a' : x.toFixed(6);
}

function yesNo(b: boolean): string {
  return b ? 'yes' : 'no';
}

export interface ReportOptions {
  /** What was tested, shown as NIST's "generator is <...>". */
  source?: string;
}

/** The NIST-style text report of a run, then the criteria of product.md §5.2. */
export function formatReport(result: BatteryResult, options: ReportOptions = {}): string {
  const s = result.summary;
  const out: string[] = [
    RULE,
    'RESULTS FOR THE UNIFORMITY OF P-VALUES AND THE PROPORTION OF PASSING SEQUENCES',
    RULE,
    `   generator is <${options.source ?? 'input'}>`,
    RULE,
    ' C1  C2  C3  C4  C5  C6  C7  C8  C9 C10  P-VALUE  PROPORTION  STATISTICAL TEST',
    RULE,
  ];
  for (const st of s.subTests) out.push(reportLine(st));

  // The footer: assess takes the general sample size from the last other test and the
  // random excursion one from the last excursion sub-test.
  const general = s.subTests.filter((st) => !isExcursion(st.test)).at(-1);
  const excursion = s.subTests.filter((st) => isExcursion(st.test)).at(-1);
  out.push('', '', DASHES);
  if (general) {
    out.push('The minimum pass rate for each statistical test with the exception of the');
    if (general.sampleSize === 0) out.push('random excursion (variant) test is undefined.', '');
    else {
      out.push(
        `random excursion (variant) test is approximately = ${minimumPassCount(general.sampleSize, s.alpha)} for a`,
        `sample size = ${general.sampleSize} binary sequences.`,
        '',
      );
    }
  }
  if (excursion) {
    if (excursion.sampleSize === 0) out.push('The minimum pass rate for the random excursion (variant) test is undefined.', '');
    else {
      out.push(
        'The minimum pass rate for the random excursion (variant) test',
        `is approximately = ${minimumPassCount(excursion.sampleSize, s.alpha)} for a sample size = ${excursion.sampleSize} binary sequences.`,
        '',
      );
    }
  }
  out.push('For further guidelines construct a probability table using the MAPLE program');
  out.push('provided in the addendum section of the documentation.');
  out.push(DASHES);
  out.push('', ...criteriaBlock(result, s));
  return `${out.join('\n')}\n`;
}

function criteriaBlock(result: BatteryResult, s: BatterySummary): string[] {
  const c = s.criteria;
  const k = c.nist_passes + c.nist_fails;
  const lines = [
    RULE,
    `QENTROPY CRITERIA (alpha = ${s.alpha}; ${result.streams} sequence(s) of ${result.n} bits; ${s.subTests.length} sub-tests)`,
    RULE,
    `Individual results:  ${c.nist_passes} passed, ${c.nist_fails} failed; success rate ${fmtRate(c.nist_success_rate)}` +
      (k ? `, minimum ${fmtRate(c.nist_min_pass_proportion)} for K = ${k}` : ''),
    `  nist_all_passed:       ${c.nist_all_passed}`,
    `Uniformity per test: ${c.uniformity_passes} passed, ${c.uniformity_fails} failed, ${c.uniformity_excluded} left out; success rate ${fmtRate(c.uniformity_success_rate)}`,
    `  uniformity_all_passed: ${c.uniformity_all_passed}`,
  ];
  const excluded = s.uniformity.filter((u) => u.verdict === 'excluded');
  for (const u of s.uniformity) if (u.verdict === 'failed') lines.push(`  not uniform: ${u.reason}`);
  if (excluded.length > 1 && excluded.length === s.uniformity.length && result.streams < 55) {
    lines.push(`  left out:    every test: ${result.streams} sequence(s); uniformity needs at least 55`);
  } else {
    for (const u of excluded) lines.push(`  left out:    ${u.reason}`);
  }
  // Loosely failing = either criterion failed. With uniformity left out for every test (too
  // few sequences) only the individual results were judged: "yes" would read as a failure
  // of the data (NIST's own data.e is one sequence), so say what was not judged instead.
  const uniformityJudged = c.uniformity_passes + c.uniformity_fails > 0;
  const loosely = uniformityJudged || !c.nist_all_passed ? yesNo(c.loosely_failing) : 'not judged (uniformity needs at least 55 sequences)';
  lines.push(
    `tests_passed:          ${c.tests_passed}   (strictly failing: ${yesNo(c.strictly_failing)}, loosely failing: ${loosely})`,
    `NIST proportion check: ${s.proportionFlags} of ${s.subTests.length} sub-tests outside the acceptable range (*)`,
  );
  const rep = s.repetition;
  if (!rep.flagged) lines.push('Repetition:            no identical sequences; the stream does not repeat');
  else {
    lines.push(`Repetition:            FLAGGED`);
    if (rep.identical.length) {
      const shown = rep.identical.slice(0, 10).map(([i, j]) => `#${j} = #${i}`);
      lines.push(
        `  ${rep.identical.length} sequence(s) repeat an earlier one (0-based): ${shown.join(', ')}${rep.identical.length > 10 ? ', ...' : ''}`,
      );
    }
    if (rep.periodBits) lines.push(`  the tested bits repeat with a period of ${rep.periodBits} bits`);
  }
  // Not-applicable notes, grouped per test.
  const notes = new Map<string, { count: number; first: string }>();
  for (const seq of result.sequences) {
    for (const [test, note] of Object.entries(seq.notes ?? {})) {
      const n = notes.get(test);
      if (n) n.count++;
      else notes.set(test, { count: 1, first: note });
    }
  }
  for (const [test, n] of notes) lines.push(`Note: ${test} on ${n.count} of ${result.streams} sequence(s): ${n.first}`);
  lines.push(RULE);
  return lines;
}

/** The JSON of `qentropy sts --json` (product.md §5.4): per-sequence P-values, summary when M > 1. */
export function toJson(result: BatteryResult): Record<string, unknown> {
  const out: Record<string, unknown> = {
    n: result.n,
    streams: result.streams,
    params: result.params,
    sequences: result.sequences.map((seq) => (seq.notes ? { tests: seq.tests, notes: seq.notes } : { tests: seq.tests })),
  };
  if (result.streams > 1) out.summary = summaryJson(result.summary);
  return out;
}

/** The summary as JSON: the criteria fields of product.md §5.2 first, then the full report. */
export function summaryJson(s: BatterySummary): Record<string, unknown> {
  return {
    ...s.criteria,
    alpha: s.alpha,
    uniformity_tests: s.uniformity,
    proportion_flags: s.proportionFlags,
    uniformity_flags: s.uniformityFlags,
    repetition: { identical: s.repetition.identical, period_bits: s.repetition.periodBits, flagged: s.repetition.flagged },
    sub_tests: s.subTests.map((st) => ({
      test: st.test,
      label: st.label,
      histogram: st.histogram,
      p_value_uniformity: st.uniformityP,
      uniformity_assessed: st.uniformityAssessed,
      uniformity_ok: st.uniformityOk,
      passed: st.passed,
      sample_size: st.sampleSize,
      proportion_ok: st.proportionOk,
    })),
  };
}
