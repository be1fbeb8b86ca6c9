// The health gate's tests in native code on a worker thread (native/health/gate.h):
// SP 800-90B RCT/APT, the repeated-block check and the pattern check on a batch of
// 1,024-byte blocks in stream order. The event loop only hands the batch over and reads
// one flag byte per block back; the tests themselves never run on it.
import { addon } from './addon.js';

export const GATE_BLOCK = 1024;
/** The largest batch one test() call takes (16 MiB). */
export const GATE_MAX_BATCH = 16 * 1024 * 1024;

export interface NativeGateOptions {
  /** Assessed min-entropy per byte for the RCT/APT cutoffs (0 < H <= 8, default 8). */
  minEntropy?: number;
  /** -log2 of each test's false-alarm probability (default 20). */
  alphaLog2?: number;
  startupSamples?: number;
  /** Pattern check: see PatternOptions. */
  historyBytes?: number;
  linearBits?: number;
  linearMargin?: number;
}

/** One block's results. */
export interface GateBlockVerdict {
  /** RCT and APT passed every sample of the block. */
  healthPassed: boolean;
  /** Start-up tests complete (up to the end of this block). */
  ready: boolean;
  /** The RCT/APT test that fired first, and its log line. */
  test?: 'repetition-count' | 'adaptive-proportion';
  detail?: string;
  /** The block equals the block before it. */
  repeated: boolean;
  patternPassed: boolean;
  /** Why the pattern check failed, one line. */
  patternMessage?: string;
}

interface RawResult {
  flags: Uint8Array;
  failures: { index: number; test?: GateBlockVerdict['test']; detail?: string; pattern?: string }[];
}

/**
 * A stateful gate for one stream. One batch at a time: test() rejects while the
 * previous batch is still being tested (a caller awaits each batch, which is also what
 * applies back-pressure to the source).
 */
export class NativeGate {
  readonly #handle: unknown;

  /** Throws RangeError for bad options. */
  constructor(options: NativeGateOptions = {}) {
    this.#handle = addon.gateCreate(options);
  }

  /**
   * Tests whole 1,024-byte blocks (at most 16 MiB) on a worker thread. `blocks` must not
   * be changed until the promise settles.
   */
  async test(blocks: Uint8Array): Promise<GateBlockVerdict[]> {
    const raw = (await addon.gateTest(this.#handle, blocks)) as RawResult;
    const verdicts: GateBlockVerdict[] = Array.from(raw.flags, (f) => ({
      healthPassed: (f & 1) !== 0,
      ready: (f & 2) !== 0,
      patternPassed: (f & 4) !== 0,
      repeated: (f & 8) !== 0,
    }));
    for (const failure of raw.failures) {
      const v = verdicts[failure.index]!;
      if (failure.test !== undefined) v.test = failure.test;
      if (failure.detail !== undefined) v.detail = failure.detail;
      if (failure.pattern !== undefined) v.patternMessage = failure.pattern;
    }
    return verdicts;
  }
}
