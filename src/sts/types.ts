// Types of the NIST SP 800-22 battery API (docs/sts.md).

/** The 15 tests in NIST's order; these names are used in JSON and on the CLI. */
export const TEST_NAMES = [
  'frequency',
  'block_frequency',
  'cumulative_sums',
  'runs',
  'longest_run',
  'rank',
  'fft',
  'non_overlapping_template',
  'overlapping_template',
  'universal',
  'approximate_entropy',
  'random_excursions',
  'random_excursions_variant',
  'serial',
  'linear_complexity',
] as const;

export type TestName = (typeof TEST_NAMES)[number];

/** NIST's `assess` parameters; every field optional, defaults are NIST's. */
export interface StsParams {
  /** Block frequency block length M (default 128). */
  block_frequency_M?: number;
  /** Non-overlapping template length m, 2..21 (default 9: 148 templates). */
  non_overlapping_template_m?: number;
  /** Overlapping template length m (default 9). */
  overlapping_template_m?: number;
  /** Approximate entropy block length m (default 10). */
  approximate_entropy_m?: number;
  /** Serial block length m (default 16). */
  serial_m?: number;
  /** Linear complexity block length M (default 500). */
  linear_complexity_M?: number;
}

export const DEFAULT_PARAMS: Required<StsParams> = {
  block_frequency_M: 128,
  non_overlapping_template_m: 9,
  overlapping_template_m: 9,
  approximate_entropy_m: 10,
  serial_m: 16,
  linear_complexity_M: 500,
};

export const PARAM_NAMES = Object.keys(DEFAULT_PARAMS) as (keyof StsParams)[];

/** P-values of one sequence: test name -> its sub-tests' P-values in NIST's order, null = not applicable. */
export type SequencePValues = Partial<Record<TestName, (number | null)[]>>;

export interface SequenceResult {
  tests: SequencePValues;
  /** Why a test's sub-tests are not applicable (as NIST prints it); only tests with a note. */
  notes?: Partial<Record<TestName, string>>;
}

/** One sub-test over the batch, as a line of NIST's finalAnalysisReport.txt. */
export interface SubTestSummary {
  test: TestName;
  /** Position among the test's P-values. */
  index: number;
  /** "forward", "x = -4", a template such as "000000001", "1"/"2" for serial; "" when alone. */
  label: string;
  /** C1..C10: how many P-values fell in [0, 0.1), [0.1, 0.2), ..., [0.9, 1]. */
  histogram: number[];
  /** Sequences where the sub-test applies (K). */
  sampleSize: number;
  /** Of those, P >= alpha. */
  passed: number;
  /** NIST's P-value of uniformity (P_T); null when K < 10 (NIST prints "----"). */
  uniformityP: number | null;
  /** K >= 55: enough P-values to judge uniformity (SP 800-22 §4.2.2). */
  uniformityAssessed: boolean;
  /** Judged and P_T >= 0.0001. */
  uniformityOk: boolean;
  /** NIST's proportion check (false also when K = 0). */
  proportionOk: boolean;
}

export type UniformityVerdict = 'passed' | 'failed' | 'excluded';

/** The published criteria of product.md §5.2 plus their context. */
export interface QualityCriteria {
  tests_passed: boolean;
  nist_all_passed: boolean;
  nist_fails: number;
  nist_passes: number;
  /** passes / (passes + fails); null when there are no applicable results. */
  nist_success_rate: number | null;
  /** NIST's minimum pass proportion (1 - a) - 3 sqrt(a (1 - a) / K) for K = passes + fails. */
  nist_min_pass_proportion: number | null;
  uniformity_all_passed: boolean;
  uniformity_fails: number;
  uniformity_passes: number;
  /** Tests left out of the uniformity counts (too few applicable sequences). */
  uniformity_excluded: number;
  /** passes / (passes + fails); null when no test could be judged. */
  uniformity_success_rate: number | null;
  /** Both criteria failed. */
  strictly_failing: boolean;
  /** At least one criterion failed. */
  loosely_failing: boolean;
}

export interface RepetitionReport {
  /** Pairs [i, j], i < j: sequence j repeats sequence i exactly (0-based). */
  identical: [number, number][];
  /** The tested bit stream repeats with this period (bits); 0 when it does not. */
  periodBits: number;
  flagged: boolean;
}

export interface BatterySummary {
  streams: number;
  alpha: number;
  criteria: QualityCriteria;
  subTests: SubTestSummary[];
  /** Per test: uniform, not, or left out, with the reason. */
  uniformity: { test: TestName; verdict: UniformityVerdict; reason: string }[];
  /** Sub-tests failing NIST's proportion check ("*" in the report). */
  proportionFlags: number;
  /** Sub-tests whose uniformity was judged and failed ("*" in the report). */
  uniformityFlags: number;
  repetition: RepetitionReport;
}

export interface BatteryResult {
  /** Bits per sequence (N). */
  n: number;
  /** Number of sequences (M). */
  streams: number;
  params: Required<StsParams>;
  tests: TestName[];
  sequences: SequenceResult[];
  summary: BatterySummary;
}

export interface BatteryProgress {
  completed: number;
  total: number;
}

export interface RunBatteryOptions {
  /** Number of sequences M (default 1). */
  streams?: number;
  /** Bits per sequence N (default: all bits / M). */
  bitsPerStream?: number;
  /** Bits of `bits` to use when not all of its bytes are (default bits.length x 8). */
  bitCount?: number;
  params?: StsParams;
  /** Tests to run (default all 15); always run and reported in NIST's order. */
  tests?: readonly TestName[];
  /** Worker threads (default 1; 0 = every core). */
  threads?: number;
  /** Aborting stops the run between sequences; the promise rejects with an AbortError. */
  signal?: AbortSignal;
  /** Sequences completed so far; called on the event loop. */
  onProgress?: (progress: BatteryProgress) => void;
}
