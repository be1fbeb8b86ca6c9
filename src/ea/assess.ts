// SP 800-90B entropy assessment of a data set (docs/ea.md): the non-IID track, the IID track
// and the restart tests, computed natively off the event loop.
import { eaAddon, type NativeAssessment } from './native.js';
import { InputReadError, MAX_INPUT_BYTES, readInput } from './read-input.js';

/** JSON keys of the ten non-IID estimators, in SP 800-90B order (§6.3.1-10). */
export const ESTIMATORS = [
  'most_common_value',
  'collision',
  'markov',
  'compression',
  't_tuple',
  'lrs',
  'multi_mcw',
  'lag',
  'multi_mmc',
  'lz78y',
] as const;
export type EstimatorName = (typeof ESTIMATORS)[number];

/** Tracks to run: `non-iid` is the default, as in NIST's tools. */
export type Track = 'non-iid' | 'iid' | 'both';

export interface AssessOptions {
  /** Bits per sample, 1..8; default: inferred from the widest sample. */
  bitsPerSymbol?: number;
  track?: Track;
  /** Conditioned output (SP 800-90B §3.1.5.2): assess the bitstring only (NIST's -c). */
  conditioned?: boolean;
  /** Cut the bitstring to 10^6 bits (NIST's -t). */
  truncate?: boolean;
  /** Run the restart tests on this data (a 1000 x 1000 matrix) against this H_I instead. */
  restartEntropy?: number;
  threads?: number;
  /** Permutation-test shuffles (default 10,000, SP 800-90B §5.1). */
  shuffles?: number;
  /**
   * Run the permutation test to its own verdict even when the chi-square or LRS test has
   * already rejected IID (NIST's tool does; by default shuffling stops there).
   */
  fullPermutationTest?: boolean;
  onProgress?: (done: number, total: number) => void;
  /** assessFile: the most bytes read from the file (default and upper bound 2 GiB - 1); a longer input is refused. */
  maxInputBytes?: number;
}

/** Bad input: the message is one line meant for the user. */
export class EaInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EaInputError';
  }
}

/**
 * The fewest samples each track can assess: the MultiMCW predictor needs a full 4,095-sample
 * window plus one to predict; the compression estimate needs more than 1,000 6-bit blocks of
 * bitstring (checked per bit, below); the IID chi-square tests cut the data into 10 parts.
 */
const MIN_SAMPLES = { multiMcw: 4096, compressionBits: 6006, iid: 1000 } as const;

function checkSize(samples: number, bitsPerSymbol: number, options: AssessOptions): void {
  if (options.restartEntropy !== undefined) return; // the restart matrix has its own fixed size
  const track = options.track ?? 'non-iid';
  if (track !== 'iid') {
    if (samples < MIN_SAMPLES.multiMcw) {
      throw new EaInputError(
        `${samples} samples are too few for the MultiMCW estimate (it needs at least ${MIN_SAMPLES.multiMcw})`,
      );
    }
    const bits = options.truncate ? Math.min(samples * bitsPerSymbol, 1_000_000) : samples * bitsPerSymbol;
    if (bits < MIN_SAMPLES.compressionBits) {
      throw new EaInputError(
        `${bits} bits are too few for the compression estimate (it needs at least ${MIN_SAMPLES.compressionBits})`,
      );
    }
  }
  if (track !== 'non-iid' && samples < MIN_SAMPLES.iid) {
    throw new EaInputError(`${samples} samples are too few for the IID chi-square tests (they need at least ${MIN_SAMPLES.iid})`);
  }
}

/** Width of the widest sample in bits (0 when every sample is 0). */
function dataWidth(data: Uint8Array): number {
  let seen = 0;
  for (let i = 0; i < data.length; i++) seen |= data[i]!;
  return seen === 0 ? 0 : 32 - Math.clz32(seen);
}

/** Assesses samples held in memory, one per byte. */
export async function assessBytes(data: Uint8Array, options: AssessOptions = {}): Promise<NativeAssessment> {
  const k = options.bitsPerSymbol;
  if (k !== undefined && (!Number.isInteger(k) || k < 1 || k > 8)) {
    throw new EaInputError(`bits per symbol must be an integer from 1 to 8, not ${k}`);
  }
  if (data.length === 0) throw new EaInputError('the data is empty');
  const width = dataWidth(data);
  if (k !== undefined && width > k) {
    throw new EaInputError(`samples are ${width} bits wide, wider than the ${k} bits per symbol given`);
  }
  checkSize(data.length, k ?? Math.max(width, 1), options);
  const track = options.track ?? 'non-iid';
  // Progress comes from worker threads through a queue that may still deliver after the
  // result: pass on only advances, nothing after the end, and always end at 100%.
  let best = 0;
  let finished = false;
  const report = options.onProgress;
  const onProgress = report
    ? (done: number, total: number) => {
        if (finished || done / total <= best) return;
        best = done / total;
        report(done, total);
      }
    : undefined;
  try {
    const result = await eaAddon().eaAssess(
      data,
      {
        bitsPerSymbol: k ?? 0,
        nonIid: track !== 'iid',
        iid: track !== 'non-iid',
        conditioned: options.conditioned ?? false,
        truncate: options.truncate ?? false,
        threads: options.threads ?? 1,
        ...(options.shuffles !== undefined ? { shuffles: options.shuffles } : {}),
        fullPermutationTest: options.fullPermutationTest ?? false,
        ...(options.restartEntropy !== undefined ? { restartEntropy: options.restartEntropy } : {}),
      },
      onProgress,
    );
    finished = true;
    if (report && best < 1) report(1, 1);
    return result;
  } catch (err) {
    finished = true;
    if ((err as { code?: string }).code === 'EA_INPUT') throw new EaInputError((err as Error).message);
    throw err;
  }
}

/**
 * Assesses a file of samples, one per byte (the format of NIST's tools). The file may also
 * be a FIFO, pipe or device, read to its end; at most options.maxInputBytes are read.
 */
export async function assessFile(file: string, options: AssessOptions = {}): Promise<NativeAssessment> {
  const max = options.maxInputBytes ?? MAX_INPUT_BYTES;
  if (!Number.isSafeInteger(max) || max < 1 || max > MAX_INPUT_BYTES) {
    throw new EaInputError(`the input limit must be an integer from 1 to ${MAX_INPUT_BYTES}, not ${max}`);
  }
  let data: Buffer;
  try {
    data = await readInput(file, max);
  } catch (err) {
    if (err instanceof InputReadError) throw new EaInputError(err.message);
    throw err;
  }
  if (data.length === 0) throw new EaInputError(`${file} is empty`);
  try {
    return await assessBytes(data, options);
  } catch (err) {
    if (err instanceof EaInputError) throw new EaInputError(`${file}: ${err.message}`);
    throw err;
  }
}
