// The pattern check (native/health/pattern.h): finds deterministic streams that pass the
// per-sample health tests — a byte counter, a replayed buffer, an LFSR — by looking for
// repeats within the last 64 KiB of the stream and for a linear complexity far below
// random. Its false-alarm rate is negligible (below 2^-60 per block), so a block that
// fails is evidence that the source is not random at all.
import { addon } from './addon.js';

export interface PatternOptions {
  /** How far back repeats are looked for, in bytes (multiple of 32; default 65,536). */
  historyBytes?: number;
  /** Bits of each block given to Berlekamp-Massey (default 1,280; 0 = off). */
  linearBits?: number;
  /** A block fails when its linear complexity is this far below half (default 32). */
  linearMargin?: number;
}

export interface PatternReport {
  passed: boolean;
  /** Bytes back to an earlier copy of 64 of the block's bytes (0: none). */
  repeatDistance: number;
  linearComplexity: number;
  linearBits: number;
  /** The linear-complexity part failed. */
  linear: boolean;
  /** One line for logs. */
  message: string;
}

/** Stateful: feed blocks (multiples of 32 bytes, at least 64) in stream order. */
export class PatternTester {
  readonly #handle: unknown;

  /** Throws RangeError for options outside the documented ranges. */
  constructor(options: PatternOptions = {}) {
    this.#handle = addon.patternCreate(options);
  }

  testBlock(block: Uint8Array): PatternReport {
    return addon.patternTestBlock(this.#handle, block) as PatternReport;
  }

  /**
   * The blocks of `data` (consecutive, `blockSize` bytes each), in stream order, as
   * testBlock() one by one would test them; only the failures come back, with their
   * index. Faster than one by one for 28 blocks or more (the linear complexities then run
   * 64 blocks at once).
   */
  testBlocks(data: Uint8Array, blockSize: number): Array<PatternReport & { index: number }> {
    return addon.patternTestBlocks(this.#handle, data, blockSize) as Array<PatternReport & { index: number }>;
  }

  /** Forget the stream seen so far. */
  reset(): void {
    addon.patternReset(this.#handle);
  }
}
