// The report of an assessment: the JSON that `qentropy ea --json` prints (its key names are
// an interface other tools read: docs/ea.md) and the text report.
import type { NativeAssessment, NativeEstimates, StatisticOutcome } from './native.js';
import { ESTIMATORS } from './assess.js';

type Estimates = Record<string, number | null>;

export interface EaJson {
  samples: number;
  bits_per_symbol: number;
  non_iid?: {
    literal: Estimates | null;
    bitstring: Estimates | null;
    h_original: number | null;
    h_bitstring: number | null;
    h_bitstring_per_symbol: number | null;
    h_assessed: number;
  };
  iid?: {
    most_common_value: { literal: number | null; bitstring: number | null };
    h_original: number | null;
    h_bitstring: number | null;
    h_assessed: number;
    chi_square: {
      independence: { statistic: number; df: number; p_value: number };
      goodness_of_fit: { statistic: number; df: number; p_value: number };
      passed: boolean;
    };
    lrs: { p_col: number; w: number; probability: number; passed: boolean };
    permutation: {
      statistics: Record<string, { value: number; counts: [number, number, number]; outcome: StatisticOutcome }>;
      shuffles: number;
      passed: boolean | null;
    };
    passed: boolean;
  };
  restart?: {
    h_i: number;
    h_r: number | null;
    h_c: number | null;
    max_count: number;
    cutoff: number;
    sanity_passed: boolean;
    validated: boolean;
    h_min: number | null;
  };
}

function estimates(e: NativeEstimates | null): Estimates | null {
  if (!e) return null;
  const out: Estimates = {};
  for (const name of ESTIMATORS) out[name] = e[name] ?? null;
  return out;
}

export function toJson(a: NativeAssessment, restartEntropy?: number): EaJson {
  const out: EaJson = { samples: a.samples, bits_per_symbol: a.bitsPerSymbol };
  if (a.nonIid) {
    out.non_iid = {
      literal: estimates(a.nonIid.literal),
      bitstring: estimates(a.nonIid.bitstring),
      h_original: a.nonIid.hOriginal,
      h_bitstring: a.nonIid.hBitstring,
      h_bitstring_per_symbol: a.nonIid.hBitstring === null ? null : a.nonIid.hBitstring * a.bitsPerSymbol,
      h_assessed: a.nonIid.hAssessed,
    };
  }
  if (a.iid) {
    const i = a.iid;
    const chi = (c: { statistic: number; df: number; pValue: number }) => ({ statistic: c.statistic, df: c.df, p_value: c.pValue });
    out.iid = {
      most_common_value: { literal: i.mostCommonLiteral, bitstring: i.mostCommonBitstring },
      h_original: i.hOriginal,
      h_bitstring: i.hBitstring,
      h_assessed: i.hAssessed,
      chi_square: { independence: chi(i.independence), goodness_of_fit: chi(i.goodnessOfFit), passed: i.chiSquarePassed },
      lrs: { p_col: i.lrs.collisionProbability, w: i.lrs.length, probability: i.lrs.probability, passed: i.lrs.passed },
      permutation: {
        statistics: Object.fromEntries(i.permutation.map((s) => [s.name, { value: s.value, counts: s.counts, outcome: s.outcome }])),
        shuffles: i.shuffles,
        passed: i.permutationPassed,
      },
      passed: i.passed,
    };
  }
  if (a.restart) {
    const r = a.restart;
    out.restart = {
      h_i: restartEntropy ?? Number.NaN,
      h_r: r.hRow,
      h_c: r.hColumn,
      max_count: r.maxCount,
      cutoff: r.cutoff,
      sanity_passed: r.sanityPassed,
      validated: r.validated,
      h_min: r.hMin,
    };
  }
  return out;
}

/** The assessed min-entropy per sample: non-IID if it ran, else IID, else the restart minimum. */
export function assessedMinEntropy(j: EaJson): number | null {
  return j.non_iid?.h_assessed ?? j.iid?.h_assessed ?? j.restart?.h_min ?? null;
}

const LABELS: Record<string, string> = {
  most_common_value: 'most common value (6.3.1)',
  collision: 'collision (6.3.2)',
  markov: 'Markov (6.3.3)',
  compression: 'compression (6.3.4)',
  t_tuple: 't-tuple (6.3.5)',
  lrs: 'longest repeated substring (6.3.6)',
  multi_mcw: 'MultiMCW prediction (6.3.7)',
  lag: 'lag prediction (6.3.8)',
  multi_mmc: 'MultiMMC prediction (6.3.9)',
  lz78y: 'LZ78Y prediction (6.3.10)',
};

const fmt = (v: number | null | undefined) => (v === null || v === undefined ? '-' : v.toFixed(6));
const verdict = (ok: boolean) => (ok ? 'passed' : 'FAILED');

const OUTCOME_MARK: Record<StatisticOutcome, string> = { passed: '', failed: ' *', open: ' ?' };

function permutationVerdict(passed: boolean | null): string {
  if (passed === null) return 'not decided (? = open statistic: shuffling stopped, the chi-square or LRS test having failed)';
  return passed ? 'passed' : 'FAILED (* = statistic that can no longer settle; ? = still open when shuffling stopped)';
}

/** A readable report (docs/ea.md "Reading the report"). */
export function formatText(j: EaJson, source: string): string {
  const lines: string[] = [];
  lines.push(`SP 800-90B entropy assessment of ${source}`);
  lines.push(`${j.samples} samples of ${j.bits_per_symbol} bit${j.bits_per_symbol === 1 ? '' : 's'}`);
  if (j.samples < 1_000_000) lines.push('warning: SP 800-90B asks for at least 1,000,000 samples');
  const n = j.non_iid;
  if (n) {
    lines.push('', 'Non-IID track (6.3), min-entropy per sample:');
    lines.push(`  ${'estimator'.padEnd(36)} ${'literal'.padStart(10)} ${'bitstring'.padStart(10)}`);
    for (const name of ESTIMATORS) {
      const lit = n.literal?.[name];
      const bits = n.bitstring?.[name];
      if ((lit === null || lit === undefined) && (bits === null || bits === undefined)) continue;
      lines.push(`  ${LABELS[name]!.padEnd(36)} ${fmt(lit).padStart(10)} ${fmt(bits).padStart(10)}`);
    }
    if (n.h_original !== null) lines.push(`  H_original  ${fmt(n.h_original)} bits per sample`);
    if (n.h_bitstring !== null) {
      lines.push(`  H_bitstring ${fmt(n.h_bitstring)} bits per bit (x ${j.bits_per_symbol} = ${fmt(n.h_bitstring * j.bits_per_symbol)})`);
    }
    lines.push(`  assessed min-entropy: ${fmt(n.h_assessed)} bits per sample`);
  }
  const i = j.iid;
  if (i) {
    lines.push('', 'IID track (5):');
    lines.push(`  most common value: ${fmt(i.most_common_value.literal)} (literal), ${fmt(i.most_common_value.bitstring)} (bitstring)`);
    const c = i.chi_square;
    lines.push(
      `  chi-square independence T = ${c.independence.statistic.toFixed(4)}, df = ${c.independence.df}, P = ${c.independence.p_value.toPrecision(6)}`,
    );
    lines.push(
      `  chi-square goodness of fit T = ${c.goodness_of_fit.statistic.toFixed(4)}, df = ${c.goodness_of_fit.df}, P = ${c.goodness_of_fit.p_value.toPrecision(6)}`,
    );
    lines.push(`  chi-square tests: ${verdict(c.passed)}`);
    lines.push(`  longest repeated substring: W = ${i.lrs.w}, P_col = ${i.lrs.p_col.toPrecision(6)}, Pr(X >= 1) = ${i.lrs.probability.toPrecision(6)}: ${verdict(i.lrs.passed)}`);
    lines.push(`  permutation tests (${i.permutation.shuffles} shuffles):`);
    lines.push(`    ${'statistic'.padEnd(24)} ${'value'.padStart(16)}   above  equal  below`);
    for (const [name, s] of Object.entries(i.permutation.statistics)) {
      const value = Number.isInteger(s.value) ? String(s.value) : s.value.toFixed(6);
      lines.push(
        `    ${(name + OUTCOME_MARK[s.outcome]).padEnd(24)} ${value.padStart(16)} ${String(s.counts[0]).padStart(7)} ${String(s.counts[1]).padStart(6)} ${String(s.counts[2]).padStart(6)}`,
      );
    }
    lines.push(`  permutation tests: ${permutationVerdict(i.permutation.passed)}`);
    lines.push(`  IID assumption: ${i.passed ? 'supported' : 'REJECTED: use the non-IID estimate'}`);
    lines.push(`  assessed min-entropy (if IID): ${fmt(i.h_assessed)} bits per sample`);
  }
  const r = j.restart;
  if (r) {
    lines.push('', `Restart tests (3.1.4) against H_I = ${fmt(r.h_i)}:`);
    lines.push(`  sanity check: largest count ${r.max_count}, cutoff ${r.cutoff}: ${verdict(r.sanity_passed)}`);
    lines.push(`  H_r (rows) ${fmt(r.h_r)}, H_c (columns) ${fmt(r.h_c)}`);
    lines.push(`  validation: ${r.validated ? `passed, min(H_r, H_c, H_I) = ${fmt(r.h_min)}` : 'FAILED'}`);
  }
  return `${lines.join('\n')}\n`;
}
