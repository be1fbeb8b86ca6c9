// Health tests on raw entropy, in native code: SP 800-90B §4.4 (Repetition Count and
// Adaptive Proportion tests with start-up testing) and the FIPS 140-2 block tests that
// rngd runs. See docs/health-and-sinks.md for how the cutoffs are computed.
import { addon } from './addon.js';

/** What one sample is: a byte (APT window 512) or a bit, most significant first (window 1,024). */
export type SymbolMode = 'bytes' | 'bits';

export interface HealthOptions {
  /** Default 'bytes'. */
  mode?: SymbolMode;
  /**
   * Assessed min-entropy per sample in bits: per byte in 'bytes' mode (0 < H <= 8, default 8),
   * per bit in 'bits' mode (0 < H <= 1, default 1).
   */
  minEntropy?: number;
  /** -log2 of each test's false-alarm probability; default 20 (alpha = 2^-20). */
  alphaLog2?: number;
  /** Consecutive passing samples needed before output is trusted; default and minimum 1,024. */
  startupSamples?: number;
}

export interface HealthCutoffs {
  /** Repetition Count Test cutoff: this many equal samples in a row is a failure. */
  rct: number;
  /** Adaptive Proportion Test cutoff: the window's first value seen this often in one window fails. */
  apt: number;
  /** APT window in samples. */
  window: number;
}

export interface HealthFailure {
  test: 'repetition-count' | 'adaptive-proportion';
  /** Samples (bytes or bits) since the tester was created or reset. */
  sampleIndex: number;
  /** Byte offset inside the block being fed. */
  blockOffset: number;
  /** The repeated value (RCT) or the window's reference value (APT). */
  symbol: number;
  count: number;
  cutoff: number;
  /** One line for the log. */
  message: string;
}

export interface HealthBlockResult {
  /** No test fired anywhere in this block. Use the block only when `passed && ready`. */
  passed: boolean;
  /** Start-up is complete: at least `startupSamples` consecutive samples have passed. */
  ready: boolean;
  /** New failure events (one per RCT run, one per APT window). */
  failures: number;
  /** The block's first bad sample. */
  firstFailure?: HealthFailure;
}

export interface HealthStats {
  samples: number;
  rctFailures: number;
  aptFailures: number;
  blocksPassed: number;
  blocksFailed: number;
  ready: boolean;
  rctCutoff: number;
  aptCutoff: number;
  window: number;
}

/** The cutoffs a tester with these options uses. Throws RangeError for bad options. */
export function healthCutoffs(options: HealthOptions = {}): HealthCutoffs {
  return addon.healthCutoffs(options) as HealthCutoffs;
}

/**
 * Continuous SP 800-90B health tester for one noise source. Feed blocks in stream order;
 * state (runs, windows, start-up) carries across blocks.
 */
export class HealthTester {
  readonly #handle: unknown;
  readonly cutoffs: HealthCutoffs;

  /** Throws RangeError for options outside the ranges documented on {@link HealthOptions}. */
  constructor(options: HealthOptions = {}) {
    this.#handle = addon.healthCreate(options);
    const s = this.stats();
    this.cutoffs = { rct: s.rctCutoff, apt: s.aptCutoff, window: s.window };
  }

  /** Tests one block (any length; the feeder uses 1,024 bytes). */
  feed(block: Uint8Array): HealthBlockResult {
    return addon.healthFeed(this.#handle, block) as HealthBlockResult;
  }

  stats(): HealthStats {
    return addon.healthStats(this.#handle) as HealthStats;
  }

  /** Forget everything: start-up tests run again. */
  reset(): void {
    addon.healthReset(this.#handle);
  }
}

export type Fips140TestName = 'monobit' | 'poker' | 'runs' | 'long-run' | 'continuous-run';

export interface Fips140Report {
  passed: boolean;
  failed: Fips140TestName[];
  ones: number;
  /** The poker statistic X (passes when 2.16 < X < 46.17). */
  poker: number;
  longestRun: number;
  /** runs[bit][i]: runs of that bit of length i+1 (i = 5: 6 or more). */
  runs: [number[], number[]];
  message: string;
}

export interface Fips140Stats {
  blocks: number;
  blocksFailed: number;
  failures: Record<Fips140TestName, number>;
}

/** Bytes in one FIPS 140-2 test block (20,000 bits). */
export const FIPS140_BLOCK_BYTES = 2500;
/** The most bytes one testBlocks() call takes (16 MiB). */
export const FIPS140_MAX_BATCH = 16 * 1024 * 1024;

/** testBlocks()'s verdicts: one per block, and the failures' reports. */
export interface Fips140BatchResult {
  /** 1 where the block passed every test, 0 where it failed one. */
  passed: Uint8Array;
  /** The failing blocks only, in order (a random source fails about 1 block in 1,250). */
  failures: { index: number; failed: Fips140TestName[]; message: string }[];
}

/**
 * The FIPS 140-2 tests rngd runs, on 2,500-byte blocks. Stateful only for the continuous
 * test, which compares each 32-bit word with the previous one across blocks.
 */
export class Fips140Tester {
  readonly #handle: unknown = addon.fipsCreate();
  /** The last testBlocks() call: the next one starts after it, so the stream stays in order. */
  #tail: Promise<unknown> = Promise.resolve();
  /** testBlocks() calls not settled yet. */
  #batches = 0;

  /**
   * Throws RangeError unless the block is exactly 2,500 bytes. For a single block: a
   * response's worth (hundreds of blocks, milliseconds) belongs in testBlocks.
   */
  testBlock(block: Uint8Array): Fips140Report {
    return addon.fipsTestBlock(this.#handle, block) as Fips140Report;
  }

  /**
   * Tests whole 2,500-byte blocks (at most 16 MiB) on a worker thread, in stream order
   * after any batch already handed over; the same verdicts as testBlock() one block at a
   * time. `blocks` must not be changed until the promise settles, and testBlock, stats and
   * reset throw while a batch is being tested.
   */
  testBlocks(blocks: Uint8Array): Promise<Fips140BatchResult> {
    if (blocks.length === 0 || blocks.length % FIPS140_BLOCK_BYTES !== 0 || blocks.length > FIPS140_MAX_BATCH) {
      return Promise.reject(new RangeError(`FIPS 140-2 batches are whole ${FIPS140_BLOCK_BYTES}-byte blocks, at most 16 MiB (got ${blocks.length} bytes)`));
    }
    const start = (): Promise<Fips140BatchResult> => addon.fipsTestBlocks(this.#handle, blocks) as Promise<Fips140BatchResult>;
    // Handed to the worker at once when the tester is free, else after the batches before it.
    const run = (this.#batches === 0 ? start() : this.#tail.then(start)).finally(() => {
      this.#batches -= 1;
    });
    this.#batches += 1;
    this.#tail = run.catch(() => undefined);
    return run;
  }

  stats(): Fips140Stats {
    return addon.fipsStats(this.#handle) as Fips140Stats;
  }

  reset(): void {
    addon.fipsReset(this.#handle);
  }
}
