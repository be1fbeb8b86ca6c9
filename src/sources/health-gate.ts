// The health gate between a raw physical source and the pool (product.md §3, §6): every
// 1,024-byte block of raw output goes through the SP 800-90B continuous health tests
// (Repetition Count and Adaptive Proportion, native) and a repeated-block check (the
// FIPS 140-2 continuous test, which catches a source replaying the same block that the
// per-symbol tests cannot see). Blocks that fail are zeroed and dropped, never served;
// nothing passes until the start-up tests are complete. A source whose blocks keep
// failing is taken out of service: reads reject with SourceOutOfServiceError, the filler
// stops, and health() says why.
import {
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

export interface BlockTester {
  feed(block: Buffer): BlockVerdict;
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
  private readonly failureLimit: number;
  private readonly onEvent: (event: HealthEvent) => void;
  private carry: Buffer = Buffer.alloc(0);
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

  async read(n: number, signal?: AbortSignal): Promise<Buffer> {
    const want = Math.max(HEALTH_BLOCK, Math.ceil(n / HEALTH_BLOCK) * HEALTH_BLOCK);
    const passed: Buffer[] = [];
    let passedBytes = 0;
    while (passedBytes === 0) {
      if (this.outOfService()) throw new SourceOutOfServiceError(this.message ?? 'source failed');
      signal?.throwIfAborted();
      let data: Buffer;
      try {
        data = await this.raw.read(want - this.carry.length, signal);
      } catch (err) {
        this.readErrors += 1;
        if (this.state === 'ok') {
          this.state = 'degraded';
          this.message = `read failed: ${(err as Error).message}`;
        }
        throw err;
      }
      const all = this.carry.length ? Buffer.concat([this.carry, data]) : data;
      if (this.carry.length) {
        this.carry.fill(0);
        data.fill(0);
      }
      const whole = all.length - (all.length % HEALTH_BLOCK);
      this.carry = Buffer.from(all.subarray(whole));
      all.fill(0, whole);
      for (let offset = 0; offset < whole; offset += HEALTH_BLOCK) {
        const block = all.subarray(offset, offset + HEALTH_BLOCK);
        if (this.check(block)) {
          passed.push(block);
          passedBytes += HEALTH_BLOCK;
        } else {
          block.fill(0);
          if (this.outOfService()) break;
        }
      }
    }
    if (passed.length === 1) return passed[0]!;
    const out = Buffer.concat(passed);
    for (const block of passed) block.fill(0);
    return out;
  }

  private outOfService(): boolean {
    return this.state === 'failed';
  }

  /** Runs one block through the tests; true when it may enter the pool. */
  private check(block: Buffer): boolean {
    const verdict = this.tester.feed(block);
    const failedTests = [...verdict.failedTests];
    if (this.previous && this.previous.equals(block)) failedTests.push('repeated-block');
    this.previous ??= Buffer.alloc(HEALTH_BLOCK);
    block.copy(this.previous);
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
      ...(verdict.detail !== undefined ? { detail: verdict.detail } : {}),
    });
    if (this.consecutiveFailures >= this.failureLimit) {
      this.state = 'failed';
      this.message =
        // The state says "out of service"; the message says why (healthz adds the prefix).
        `${this.consecutiveFailures} consecutive 1024-byte blocks failed the health tests` +
        (failedTests.length ? ` (last: ${failedTests.join(', ')})` : '');
      this.onEvent({ kind: 'out-of-service', source: this.name, reason: this.message });
    }
    return false;
  }

  health(): SourceHealth {
    return {
      name: this.name,
      state: this.state,
      development: this.development,
      healthTested: true,
      ...(this.message !== undefined ? { message: this.message } : {}),
      blocksPassed: this.blocksPassed,
      blocksFailed: this.blocksFailed,
      testFailures: { ...this.testFailures },
      readErrors: this.readErrors,
    };
  }

  async close(): Promise<void> {
    this.carry.fill(0);
    this.previous?.fill(0);
    await this.raw.close();
  }
}
