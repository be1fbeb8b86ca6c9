// Typed access to the SP 800-90B functions of the addon (native/napi/ea.cc).
import { addon } from '../native/addon.js';

/** Estimator min-entropies keyed by the names of `qentropy ea --json`; null = not run. */
export type NativeEstimates = Record<string, number | null>;

export interface NativeNonIid {
  literal: NativeEstimates | null;
  bitstring: NativeEstimates | null;
  hOriginal: number | null;
  hBitstring: number | null;
  hAssessed: number;
}

export interface NativeChiSquare {
  statistic: number;
  df: number;
  pValue: number;
}

/**
 * A permutation statistic under the counting rule: passed (settled), failed (can no longer
 * settle within the shuffles), open (shuffling stopped first, the verdict being settled).
 */
export type StatisticOutcome = 'passed' | 'failed' | 'open';

export interface NativeIid {
  mostCommonLiteral: number | null;
  mostCommonBitstring: number | null;
  hOriginal: number | null;
  hBitstring: number | null;
  hAssessed: number;
  independence: NativeChiSquare;
  goodnessOfFit: NativeChiSquare;
  chiSquarePassed: boolean;
  lrs: { collisionProbability: number; length: number; probability: number; passed: boolean };
  permutation: { name: string; value: number; counts: [number, number, number]; outcome: StatisticOutcome }[];
  shuffles: number;
  /** null: shuffling stopped (verdict already settled by the chi-square or LRS test) before the permutation test had one. */
  permutationPassed: boolean | null;
  passed: boolean;
}

export interface NativeRestart {
  hRow: number | null;
  hColumn: number | null;
  sanityPassed: boolean;
  maxCount: number;
  cutoff: number;
  validated: boolean;
  hMin: number | null;
}

export interface NativeAssessment {
  samples: number;
  bitsPerSymbol: number;
  alphabetSize: number;
  nonIid?: NativeNonIid;
  iid?: NativeIid;
  restart?: NativeRestart;
}

export interface NativeAssessOptions {
  /** 0 (or absent) infers the width from the data. */
  bitsPerSymbol?: number;
  nonIid?: boolean;
  iid?: boolean;
  conditioned?: boolean;
  truncate?: boolean;
  threads?: number;
  shuffles?: number;
  fullPermutationTest?: boolean;
  /** Assess the data as a 1000 x 1000 restart matrix against this initial estimate. */
  restartEntropy?: number;
}

interface EaAddon {
  eaAssess(
    data: Uint8Array,
    options: NativeAssessOptions,
    onProgress?: (done: number, total: number) => void,
  ): Promise<NativeAssessment>;
  eaEstimatorKeys: string[];
  eaPermutationStatistics: string[];
}

/** The addon's assessment functions; throws a clear error when the binary predates them. */
export function eaAddon(): EaAddon {
  const native = addon as Partial<EaAddon>;
  if (typeof native.eaAssess !== 'function') {
    throw new Error('this build of the qentropy addon has no SP 800-90B assessment (rebuild with npm run build:native)');
  }
  return native as EaAddon;
}
