// The health gate's tests in native code on a worker thread (native/health/gate.h):
// SP 800-90B RCT/APT, the repeated-block check and the pattern check on a batch of
// 1,024-byte blocks in stream order. The event loop only hands the batch over and reads
// one flag byte per block back; the tests themselves never run on it. Batches are tested in
// the order test() is called; two at a time are with the native side, so its worker goes
// from one straight to the next.
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

/** Batches the native side holds for one gate: the one being tested and the next. */
const NATIVE_QUEUE = 2;

/**
 * A stateful gate for one stream. Batches are tested in the order test() is called, so a
 * caller may hand over the next batch before the last one's verdicts are back; what it has
 * handed over and not yet got back is its to bound (the health gate and the feeder hold two
 * at most, which is also what applies back-pressure to the source).
 */
export class NativeGate {
  readonly #handle: unknown;
  /** Batches waiting for a place with the native side, in call order. */
  readonly #waiting: (() => void)[] = [];
  /** Places taken with the native side (a batch handed a place keeps it until it calls the native side). */
  #withNative = 0;

  /** Throws RangeError for bad options. */
  constructor(options: NativeGateOptions = {}) {
    this.#handle = addon.gateCreate(options);
  }

  /**
   * Tests whole 1,024-byte blocks (at most 16 MiB) on a worker thread. `blocks` must not
   * be changed until the promise settles.
   */
  async test(blocks: Uint8Array): Promise<GateBlockVerdict[]> {
    // A place is handed on, never given back while batches wait: so no later call can
    // reach the native side before one that waited, and the stream stays in order.
    if (this.#withNative < NATIVE_QUEUE) this.#withNative += 1;
    else await new Promise<void>((start) => this.#waiting.push(start));
    let raw: RawResult;
    try {
      // A bad batch throws here, synchronously: its place is handed on below all the same.
      raw = (await addon.gateTest(this.#handle, blocks)) as RawResult;
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#withNative -= 1;
    }
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
