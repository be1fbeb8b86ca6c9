// One upstream entropy API as the feeder sees it: the client (strict decoding, retry
// policy) plus the health tests every block must pass before it may reach the buffer.
// A source stops for good on 400/401 (until a reload), and is disabled for a while when
// its blocks keep failing the health tests.
import { BLOCK_SIZE, EntropyClient, EntropyClientError } from '../client/index.js';
import { FIPS140_BLOCK_BYTES, Fips140Tester, HealthTester } from '../native/health.js';

export interface FeederSourceOptions {
  url: string;
  token: string;
  ca?: string | Buffer;
  /** TLS key-exchange groups offered (default: the runtime's). */
  tlsGroups?: string;
  /** Blocks per request (1..512, default 64). */
  blocksPerRequest: number;
  /** Assessed min-entropy per byte for the SP 800-90B cutoffs. */
  minEntropyPerByte: number;
  /** Also run the FIPS 140-2 tests rngd runs, on 2,500-byte blocks. */
  fips140: boolean;
  /** Failed blocks in a row that take the source out of service (default 16). */
  failureLimit: number;
  /** How long a source that kept failing stays out before it is tried again. */
  retryAfterMs: number;
  /** Client retry tuning (tests). */
  retry?: { baseDelayMs?: number; maxDelayMs?: number; allotmentWaitMs?: number };
}

export type SourceState = 'active' | 'retrying' | 'disabled' | 'stopped';

export interface SourceStatus {
  url: string;
  state: SourceState;
  bytesPulled: number;
  blocksPassed: number;
  blocksFailed: number;
  /** Blocks not used while the start-up tests run (after a start or a failure). */
  blocksStartup: number;
  fipsBlocksFailed: number;
  failures: { 'repetition-count': number; 'adaptive-proportion': number; fips140: number };
  lastError?: string;
  /** Unix ms when a disabled source is tried again. */
  retryAt?: number;
}

export interface SourceEvents {
  blockFailed(info: { source: string; test: string; detail: string }): void;
  disabled(info: { source: string; reason: string; retryAt: number }): void;
  stopped(info: { source: string; reason: string }): void;
  retrying(info: { source: string; error: string; delayMs: number }): void;
}

/** The blocks of one pull that passed every test, concatenated (the caller zeroes it). */
export type Passed = Buffer;

export class FeederSource {
  readonly url: string;
  private readonly client: EntropyClient;
  private readonly tester: HealthTester;
  private readonly fips: Fips140Tester | undefined;
  /** 90B-passed bytes waiting for a whole FIPS block. */
  private fipsStage = Buffer.alloc(0);
  private failedInARow = 0;
  readonly status: SourceStatus;

  constructor(
    private readonly options: FeederSourceOptions,
    private readonly events: SourceEvents,
  ) {
    this.url = options.url;
    this.client = new EntropyClient({
      url: options.url,
      token: options.token,
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
      ...(options.tlsGroups !== undefined ? { tlsGroups: options.tlsGroups } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
      onRetry: ({ error, delayMs }) => {
        this.status.state = 'retrying';
        this.status.lastError = error.message;
        this.events.retrying({ source: this.url, error: error.message, delayMs });
      },
    });
    this.tester = new HealthTester({ mode: 'bytes', minEntropy: options.minEntropyPerByte, alphaLog2: 20 });
    this.fips = options.fips140 ? new Fips140Tester() : undefined;
    this.status = {
      url: options.url,
      state: 'active',
      bytesPulled: 0,
      blocksPassed: 0,
      blocksFailed: 0,
      blocksStartup: 0,
      fipsBlocksFailed: 0,
      failures: { 'repetition-count': 0, 'adaptive-proportion': 0, fips140: 0 },
    };
  }

  /** Usable now: not stopped, and not inside a disable period. */
  available(now = Date.now()): boolean {
    if (this.status.state === 'stopped') return false;
    if (this.status.state === 'disabled') {
      if ((this.status.retryAt ?? 0) > now) return false;
      // Back in service: start-up tests run again on its first bytes.
      this.status.state = 'active';
      delete this.status.retryAt;
      this.failedInARow = 0;
      this.tester.reset();
    }
    return true;
  }

  /**
   * Pulls up to `maxBytes` (whole blocks, at least one) and returns what passed. Throws
   * the client's error when it gives up (400/401: the source is then stopped), or the
   * abort reason.
   */
  async pull(maxBytes: number, signal: AbortSignal): Promise<Passed> {
    const blocks = Math.max(1, Math.min(this.options.blocksPerRequest, Math.floor(maxBytes / BLOCK_SIZE)));
    let data: Buffer;
    try {
      data = await this.client.fetch(blocks, { signal });
    } catch (err) {
      if (signal.aborted) throw err;
      const message = err instanceof Error ? err.message : String(err);
      this.status.lastError = message;
      if (err instanceof EntropyClientError && err.errorClass !== 'transient') {
        this.status.state = 'stopped';
        const reason = `${message}; pulling from ${this.url} stopped until the config changes (fix it, then reload with SIGHUP)`;
        this.status.lastError = reason;
        this.events.stopped({ source: this.url, reason });
      }
      throw err;
    }
    this.status.state = 'active';
    this.status.bytesPulled += data.length;
    const passed: Buffer[] = [];
    try {
      for (let off = 0; off < data.length; off += BLOCK_SIZE) {
        const block = data.subarray(off, off + BLOCK_SIZE);
        const verdict = this.tester.feed(block);
        if (!verdict.passed) {
          this.status.blocksFailed += 1;
          const test = verdict.firstFailure?.test ?? 'repetition-count';
          this.status.failures[test] += Math.max(1, verdict.failures);
          this.events.blockFailed({ source: this.url, test, detail: verdict.firstFailure?.message ?? 'failed' });
          block.fill(0);
          if (++this.failedInARow >= this.options.failureLimit) {
            this.disable(`${this.failedInARow} blocks in a row failed the SP 800-90B health tests (last: ${verdict.firstFailure?.message ?? test})`);
            break;
          }
          continue;
        }
        this.failedInARow = 0;
        if (!verdict.ready) {
          // Start-up: these samples only prove the source works; they are not used.
          this.status.blocksStartup += 1;
          block.fill(0);
          continue;
        }
        this.status.blocksPassed += 1;
        passed.push(Buffer.from(block));
      }
    } finally {
      data.fill(0);
    }
    const out = Buffer.concat(passed);
    for (const b of passed) b.fill(0);
    return this.fips ? this.fipsFilter(out) : out;
  }

  /** Runs the FIPS 140-2 tests on whole 2,500-byte blocks; the rest waits for the next pull. */
  private fipsFilter(fresh: Buffer): Buffer {
    const staged = Buffer.concat([this.fipsStage, fresh]);
    this.fipsStage.fill(0);
    fresh.fill(0);
    const whole = staged.length - (staged.length % FIPS140_BLOCK_BYTES);
    const out: Buffer[] = [];
    for (let off = 0; off < whole; off += FIPS140_BLOCK_BYTES) {
      const block = staged.subarray(off, off + FIPS140_BLOCK_BYTES);
      const report = this.fips!.testBlock(block);
      if (report.passed) {
        out.push(Buffer.from(block));
      } else {
        this.status.fipsBlocksFailed += 1;
        this.status.failures.fips140 += 1;
        this.events.blockFailed({ source: this.url, test: 'fips140', detail: report.message });
      }
    }
    this.fipsStage = Buffer.from(staged.subarray(whole));
    staged.fill(0);
    const result = Buffer.concat(out);
    for (const b of out) b.fill(0);
    return result;
  }

  private disable(reason: string): void {
    const retryAt = Date.now() + this.options.retryAfterMs;
    this.status.state = 'disabled';
    this.status.retryAt = retryAt;
    this.status.lastError = reason;
    this.events.disabled({ source: this.url, reason, retryAt });
  }

  async close(): Promise<void> {
    this.fipsStage.fill(0);
    await this.client.close();
  }
}
