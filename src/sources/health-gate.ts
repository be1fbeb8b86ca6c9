// The health gate between a raw physical source and the pool (product.md §3, §6): every
// 1,024-byte block of raw output goes through the SP 800-90B continuous health tests
// (Repetition Count and Adaptive Proportion, native) and a repeated-block check (the
// FIPS 140-2 continuous test, which catches a source replaying the same block that the
// per-symbol tests cannot see), and the pattern check (native/health/pattern.h: a byte
// counter, an LFSR, a replayed buffer pass RCT and APT but not this). Blocks that fail
// are zeroed and dropped, never served; nothing passes until the start-up tests are
// complete. A source is taken out of service when its blocks keep failing, and as not
// random on one pattern failure or when 8 of its last 128 blocks failed the health
// tests (a random source fails them about once in 16,000 blocks at H = 7.5, and once in
// 1,000 at most: 8 in 128 happens to it with probability about 2^-40; docs/entropy-service.md).
// Then reads reject with SourceOutOfServiceError (SourceNotRandomError when not random:
// the filler then empties the pool), the filler stops, and health() says why.
import type { GateBlockVerdict } from '../native/gate.js';
import { PatternTester } from '../native/pattern.js';
import { ReadAhead } from '../read-ahead.js';
import { FAILURE_WINDOW, FAILURE_WINDOW_LIMIT, FailureWindow } from './failure-window.js';
import {
  SourceNotRandomError,
  SourceOutOfServiceError,
  type EntropySource,
  type SourceHealth,
  type SourceState,
} from './types.js';

export const HEALTH_BLOCK = 1024;

/** Raw noise-source output before any test. */
export interface RawSource {
  readonly name: string;
  readonly development: boolean;
  /** See EntropySource.preferredReadBytes. */
  readonly preferredReadBytes?: number | undefined;
  read(n: number, signal?: AbortSignal): Promise<Buffer>;
  close(): Promise<void>;
  /** A source with its own state (upstream: retrying, refused) reports it here. */
  health?(): SourceHealth;
}

/** One block's verdict from a stateful tester fed in stream order. */
export interface BlockVerdict {
  passed: boolean;
  /** The start-up tests are complete (output may be used). */
  ready: boolean;
  /** Names of the tests that fired in this block (may be empty for a failing block). */
  failedTests: string[];
  /** One line for logs about the first failure. */
  detail?: string;
}

/** A tester run block by block on the calling thread (the gate adds the pattern check). */
export interface SyncBlockTester {
  feed(block: Buffer): BlockVerdict;
}

/**
 * A tester that runs every per-block test (RCT/APT, repeated block, pattern check) on a
 * batch of whole blocks off the event loop (createNativeTester: src/native/gate.ts).
 * Batches are tested in the order handed over, the next possibly before the last one's
 * verdicts are back.
 */
export interface BatchBlockTester {
  testBlocks(blocks: Buffer): Promise<GateBlockVerdict[]>;
}

export type BlockTester = SyncBlockTester | BatchBlockTester;

/**
 * The most bytes handed to a batch tester at once: the event loop's share of a batch
 * (reading one flag byte per block back) stays far below 1 ms, and a failure is acted
 * on within this many bytes of where it was found.
 */
export const HEALTH_BATCH = 1024 * 1024;

/** Raw bytes handed to the tester, their verdicts to come. */
interface TestedRead {
  /** The carry before the read and the bytes read: the first `whole` are being tested. */
  all: Buffer;
  whole: number;
  verdicts: Promise<GateVerdict[]>;
}

/** Erases a read once the tester is done with its bytes (it reads them until then). */
function eraseTestedRead(read: TestedRead): void {
  void read.verdicts.finally(() => read.all.fill(0)).catch(() => {});
}

/** Everything the gate's rules look at for one block. */
interface GateVerdict {
  /** RCT and APT passed. */
  passed: boolean;
  ready: boolean;
  failedTests: string[];
  detail?: string | undefined;
  repeated: boolean;
  patternPassed: boolean;
  patternMessage?: string | undefined;
}

export interface HealthGateOptions {
  tester: BlockTester;
  /** Consecutive failing blocks that take the source out of service (default 64). */
  failureLimit?: number;
  onEvent?: (event: HealthEvent) => void;
}

export type HealthEvent =
  | { kind: 'ready'; source: string }
  | { kind: 'block-failed'; source: string; tests: string[]; detail?: string }
  | { kind: 'out-of-service'; source: string; reason: string };

export class HealthGatedSource implements EntropySource {
  readonly name: string;
  readonly development: boolean;
  readonly preferredReadBytes: number | undefined;
  private readonly tester: BlockTester;
  /** For a SyncBlockTester: the pattern check, run here block by block. */
  private pattern: PatternTester | undefined;
  /** The health-test verdicts of the last blocks, for the failure-rate rule. */
  private readonly failureRate = new FailureWindow(FAILURE_WINDOW, FAILURE_WINDOW_LIMIT);
  /** Set when the source was found not random: nothing it delivered may be used. */
  private notRandom = false;
  private readonly failureLimit: number;
  private readonly onEvent: (event: HealthEvent) => void;
  /** Raw bytes read but not yet tested: the partial block at the end of the last read. */
  private carry: Buffer = Buffer.alloc(0);
  /**
   * The next read started ahead (read()'s `next`): the source delivers it while the bytes
   * before it are tested, and it goes to the tester as soon as it arrives, so the tester
   * goes from one read's bytes straight to the next.
   */
  private readonly ahead = new ReadAhead<TestedRead>(eraseTestedRead);
  /** Blocks tested and passed beyond what a read asked for (it asked for less than it announced), for the next read. */
  private surplus: Buffer[] = [];
  private previous: Buffer | undefined;
  private consecutiveFailures = 0;
  private testerReady = false;
  private state: SourceState = 'starting';
  private message: string | undefined = 'start-up health tests running';
  private blocksPassed = 0;
  private blocksFailed = 0;
  private readErrors = 0;
  private readonly testFailures: Record<string, number> = {};

  constructor(
    private readonly raw: RawSource,
    options: HealthGateOptions,
  ) {
    this.name = raw.name;
    this.development = raw.development;
    this.preferredReadBytes = raw.preferredReadBytes;
    this.tester = options.tester;
    this.failureLimit = options.failureLimit ?? 64;
    this.onEvent = options.onEvent ?? (() => {});
  }

  async read(n: number, signal?: AbortSignal, next = 0): Promise<Buffer> {
    const want = wholeBlocks(n);
    if (this.surplus.length > 0 && !this.outOfService()) {
      const out = this.takeSurplus(want);
      this.readAhead(next, signal);
      return out;
    }
    const passed: Buffer[] = [];
    let passedBytes = 0;
    while (passedBytes === 0) {
      if (this.outOfService()) throw this.outOfServiceError();
      signal?.throwIfAborted();
      let read: TestedRead;
      try {
        read = await (this.ahead.take() ?? this.readAndTest(want, signal));
      } catch (err) {
        if (signal?.aborted) throw err; // the caller called it off: not the source's error
        this.readErrors += 1;
        if (err instanceof SourceOutOfServiceError && !this.outOfService()) {
          // The raw source gave up for good (upstream: 400/401): out of service, its reason.
          this.takeOutOfService(err.message, false);
        } else if (this.state === 'ok') {
          this.state = 'degraded';
          this.message = `read failed: ${(err as Error).message}`;
        }
        throw err;
      }
      // Started only now, after this read has arrived: a stream's reads must not overlap.
      this.readAhead(next, signal);
      const all = read.all;
      // The tests saw every block in stream order; the rules below act on each block's
      // verdict in the same order, and stop at the first that takes the source out of service.
      let verdicts: GateVerdict[];
      try {
        verdicts = await read.verdicts;
      } catch (err) {
        all.fill(0);
        throw err;
      }
      for (let i = 0; i < verdicts.length; i += 1) {
        const block = all.subarray(i * HEALTH_BLOCK, (i + 1) * HEALTH_BLOCK);
        if (this.check(block, verdicts[i]!)) {
          passed.push(block);
          passedBytes += HEALTH_BLOCK;
        } else {
          block.fill(0);
          if (this.outOfService()) break;
        }
      }
      if (this.notRandom) {
        // Found not random in this read: the blocks of it that passed are from the same
        // deterministic stream, and the rest of the read is not looked at.
        all.fill(0);
        throw this.outOfServiceError();
      }
    }
    // A read started ahead was sized by the caller's `next`; asked for less after all, the
    // caller gets what it asked for and the next read the passed blocks beyond it.
    if (passedBytes > want) {
      this.surplus = passed.splice(want / HEALTH_BLOCK);
      passedBytes = want;
    }
    if (passed.length === 1) return passed[0]!;
    // Every block of the read passed (the usual case): it is already one buffer.
    const first = passed[0]!;
    if (first.byteOffset === 0 && first.buffer.byteLength === passedBytes && isContiguous(passed)) {
      return Buffer.from(first.buffer, 0, passedBytes);
    }
    const out = Buffer.concat(passed);
    for (const block of passed) block.fill(0);
    return out;
  }

  /** The caller will want `next` bytes more: their read starts now and runs while the bytes before them are tested. */
  private readAhead(next: number, signal: AbortSignal | undefined): void {
    if (next > 0 && !this.ahead.started) this.ahead.start((s) => this.readAndTest(wholeBlocks(next), s), signal);
  }

  /**
   * Reads up to `want` bytes after the carry and hands the whole blocks to the tester at once
   * (their verdicts are awaited by the caller); a partial block stays in the carry.
   */
  private async readAndTest(want: number, signal: AbortSignal | undefined): Promise<TestedRead> {
    const data = want > this.carry.length ? await this.raw.read(want - this.carry.length, signal) : Buffer.alloc(0);
    if (signal?.aborted) {
      // Called off while the device delivered (a read ahead no longer wanted): unread.
      data.fill(0);
      signal.throwIfAborted();
    }
    const all = this.carry.length ? Buffer.concat([this.carry, data]) : data;
    if (this.carry.length) {
      this.carry.fill(0);
      data.fill(0);
    }
    const whole = Math.min(all.length - (all.length % HEALTH_BLOCK), want);
    this.carry = Buffer.from(all.subarray(whole));
    all.fill(0, whole);
    const verdicts = this.verdicts(all.subarray(0, whole));
    verdicts.catch(() => {}); // its error is the reader's, when it awaits these verdicts
    return { all, whole, verdicts };
  }

  /** Up to `want` bytes of the surplus, in order (a copy: the blocks it came from are erased). */
  private takeSurplus(want: number): Buffer {
    const blocks = this.surplus.splice(0, want / HEALTH_BLOCK);
    const out = Buffer.concat(blocks);
    for (const block of blocks) block.fill(0);
    return out;
  }

  private eraseSurplus(): void {
    for (const block of this.surplus) block.fill(0);
    this.surplus = [];
  }

  private outOfService(): boolean {
    return this.state === 'failed';
  }

  private outOfServiceError(): SourceOutOfServiceError {
    const message = this.message ?? 'source failed';
    return this.notRandom ? new SourceNotRandomError(message) : new SourceOutOfServiceError(message);
  }

  /** The verdicts of whole blocks, from the batch tester or block by block here. */
  private async verdicts(blocks: Buffer): Promise<GateVerdict[]> {
    if ('testBlocks' in this.tester) {
      // Every batch is handed over now, in order, before another read's can be.
      const batches: Promise<GateBlockVerdict[]>[] = [];
      for (let off = 0; off < blocks.length; off += HEALTH_BATCH) {
        const batch = this.tester.testBlocks(blocks.subarray(off, off + HEALTH_BATCH));
        batch.catch(() => {}); // awaited below; an earlier batch's error may come first
        batches.push(batch);
      }
      const out: GateVerdict[] = [];
      for (const batch of batches) {
        for (const v of await batch) {
          out.push({
            passed: v.healthPassed,
            ready: v.ready,
            failedTests: v.test !== undefined ? [v.test] : [],
            detail: v.detail,
            repeated: v.repeated,
            patternPassed: v.patternPassed,
            patternMessage: v.patternMessage,
          });
        }
      }
      return out;
    }
    const out: GateVerdict[] = [];
    this.pattern ??= new PatternTester();
    for (let off = 0; off < blocks.length; off += HEALTH_BLOCK) {
      const block = blocks.subarray(off, off + HEALTH_BLOCK);
      // Both testers see every block, in stream order: their state spans blocks.
      const verdict = this.tester.feed(block);
      const pattern = this.pattern.testBlock(block);
      const repeated = this.previous !== undefined && this.previous.equals(block);
      this.previous ??= Buffer.alloc(HEALTH_BLOCK);
      block.copy(this.previous);
      out.push({ ...verdict, repeated, patternPassed: pattern.passed, patternMessage: pattern.message });
    }
    return out;
  }

  /** Applies the gate's rules to one block's verdict; true when the block may enter the pool. */
  private check(block: Buffer, verdict: GateVerdict): boolean {
    const rctAptPassed = verdict.passed && verdict.failedTests.length === 0;
    const failedTests = [...verdict.failedTests];
    if (verdict.repeated) failedTests.push('repeated-block');
    const rateReached = this.failureRate.record(failedTests.length > 0 || !verdict.passed);
    // As in the feeder, the pattern check counts only on blocks RCT and APT passed: a stuck
    // source is theirs to report. (A replayed block fails both the repeated-block check and
    // the pattern check; the pattern check's verdict is the conclusive one.)
    const patternFailed = rctAptPassed && !verdict.patternPassed;
    if (patternFailed) failedTests.push('pattern');
    const ok = verdict.passed && failedTests.length === 0;
    // Start-up samples are tested, never used: a block counts only when the tester was
    // already past start-up before it (so the block that completes start-up is dropped too).
    const wasReady = this.testerReady;
    this.testerReady = verdict.ready;
    if (ok && !wasReady) return false;
    if (ok) {
      this.consecutiveFailures = 0;
      this.blocksPassed += 1;
      if (this.state !== 'ok') {
        if (this.state === 'starting') this.onEvent({ kind: 'ready', source: this.name });
        this.state = 'ok';
        this.message = undefined;
      }
      return true;
    }
    this.blocksFailed += 1;
    this.consecutiveFailures += 1;
    for (const test of failedTests) this.testFailures[test] = (this.testFailures[test] ?? 0) + 1;
    this.onEvent({
      kind: 'block-failed',
      source: this.name,
      tests: failedTests,
      ...(patternFailed ? { detail: verdict.patternMessage ?? 'pattern found' } : verdict.detail !== undefined ? { detail: verdict.detail } : {}),
    });
    if (patternFailed) {
      // The pattern check has no false alarms to speak of (below 2^-60 a block): one
      // failure shows the source is deterministic.
      this.takeOutOfService(`not random: ${verdict.patternMessage ?? 'pattern found'}`, true);
    } else if (this.consecutiveFailures >= this.failureLimit) {
      this.takeOutOfService(
        // The state says "out of service"; the message says why (healthz adds the prefix).
        `${this.consecutiveFailures} consecutive 1024-byte blocks failed the health tests` +
          (failedTests.length ? ` (last: ${failedTests.join(', ')})` : ''),
        false,
      );
    } else if (rateReached) {
      this.takeOutOfService(
        `not random: ${this.failureRate.failures} of its last ${this.failureRate.count} 1024-byte blocks failed the health tests ` +
          `(last: ${failedTests.join(', ')}; a random source fails about 1 in 16,000 at H = 7.5, and 1 in 1,000 at most by design)`,
        true,
      );
    }
    return false;
  }

  private takeOutOfService(reason: string, notRandom: boolean): void {
    this.ahead.drop();
    this.eraseSurplus();
    this.state = 'failed';
    this.message = reason;
    this.notRandom = notRandom;
    this.onEvent({ kind: 'out-of-service', source: this.name, reason });
  }

  health(): SourceHealth {
    // While the gate has no verdict of its own, a raw source that is retrying says why.
    const raw = this.raw.health?.();
    const rawDegraded = this.state !== 'failed' && raw?.state === 'degraded';
    const state = rawDegraded ? 'degraded' : this.state;
    const message = rawDegraded ? raw.message : this.message;
    return {
      name: this.name,
      state,
      development: this.development,
      healthTested: true,
      ...(message !== undefined ? { message } : {}),
      blocksPassed: this.blocksPassed,
      blocksFailed: this.blocksFailed,
      testFailures: { ...this.testFailures },
      readErrors: this.readErrors + (raw?.readErrors ?? 0),
    };
  }

  async close(): Promise<void> {
    this.ahead.drop();
    this.eraseSurplus();
    this.carry.fill(0);
    this.previous?.fill(0);
    await this.raw.close();
  }
}

/** `n` bytes rounded up to whole blocks (at least one). */
function wholeBlocks(n: number): number {
  return Math.max(HEALTH_BLOCK, Math.ceil(n / HEALTH_BLOCK) * HEALTH_BLOCK);
}

/** The blocks follow each other in one ArrayBuffer. */
function isContiguous(blocks: Buffer[]): boolean {
  for (let i = 1; i < blocks.length; i += 1) {
    const prev = blocks[i - 1]!;
    if (blocks[i]!.buffer !== prev.buffer || blocks[i]!.byteOffset !== prev.byteOffset + prev.length) return false;
  }
  return true;
}
