// One upstream entropy API as the feeder sees it: the client (strict decoding, retry
// policy) plus the tests every block must pass before it may reach the buffer: SP 800-90B
// RCT/APT and the pattern check on every 1,024-byte block, then optionally FIPS 140-2 on
// 2,500-byte blocks. A source stops for good on 400/401 (until a reload), and is taken out
// of service for a while when its blocks keep failing, or fail far more often than a
// random source's would (docs/feeder.md, "Health tests").
import { BLOCK_SIZE, EntropyClient, EntropyClientError } from '../client/index.js';
import { NativeGate, type GateBlockVerdict } from '../native/gate.js';
import { FIPS140_BLOCK_BYTES, Fips140Tester, type Fips140BatchResult } from '../native/health.js';
import { ReadAhead } from '../read-ahead.js';
import { RecycledBuffers } from '../recycled-buffers.js';
import { FAILURE_WINDOW, FAILURE_WINDOW_LIMIT, FailureWindow } from '../sources/failure-window.js';

export interface FeederSourceOptions {
  url: string;
  token: string;
  ca?: string | Buffer;
  /** TLS key-exchange groups offered (default: the runtime's). */
  tlsGroups?: string;
  /** Blocks per request (1..512, default 64). */
  blocksPerRequest: number;
  /** Min-entropy per byte for the SP 800-90B cutoffs (the configured value, or the assessed one when lower). */
  minEntropyPerByte: number;
  /** This source's assessed min-entropy per byte (`health.assessment`): what the combining mode credits it with. */
  assessedMinEntropyPerByte?: number;
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

/** The tests a block can fail, each counted on its own. */
export type HealthTestName = 'repetition-count' | 'adaptive-proportion' | 'pattern' | 'fips140';

/**
 * Why pulled bytes were not used. Every pulled byte is either passed to the buffer,
 * dropped for exactly one of these reasons, or still waiting for a whole FIPS block:
 * bytesPulled = bytesPassed + sum(bytesDropped) + bytesAwaitingFips.
 */
export type DropReason =
  | HealthTestName
  /** Start-up: the first blocks after a start or a return to service are tested, never used. */
  | 'startup'
  /**
   * Blocks that passed every test, dropped because the source was taken out of service as
   * not random in the same pull (or while they waited for a whole FIPS block).
   */
  | 'not-random'
  /** The rest of a response, untested, after the source was taken out of service in it. */
  | 'out-of-service';

export interface SourceStatus {
  url: string;
  state: SourceState;
  bytesPulled: number;
  /** Bytes that passed every test and went to the buffer. */
  bytesPassed: number;
  bytesDropped: Record<DropReason, number>;
  /** Bytes that passed SP 800-90B and the pattern check, waiting for a whole FIPS block. */
  bytesAwaitingFips: number;
  /** Test verdicts that failed, by test: 1,024-byte blocks (FIPS 140-2: 2,500-byte blocks). */
  failures: Record<HealthTestName, number>;
  /** The last problem; cleared once the source delivers again. */
  lastError?: string;
  /** Unix ms when a disabled source is tried again. */
  retryAt?: number;
}

export interface SourceEvents {
  blockFailed(info: { source: string; test: string; detail: string }): void;
  disabled(info: { source: string; reason: string; retryAt: number }): void;
  /** The source was judged not random: what it delivered must not be used. */
  untrusted(info: { source: string; reason: string }): void;
  stopped(info: { source: string; reason: string }): void;
  retrying(info: { source: string; error: string; delayMs: number }): void;
  /** The source delivers again after an error (`after` is what was wrong). */
  recovered(info: { source: string; after: string }): void;
  /** A disabled source is tried again after its disable period (`after` is why it was disabled). */
  returned(info: { source: string; after: string }): void;
}

/**
 * The blocks of one pull that passed every test, concatenated. The caller zeroes it, and
 * is done with it (and the buffer behind it) when it pulls from the source again.
 */
export type Passed = Buffer;

export { FAILURE_WINDOW, FAILURE_WINDOW_LIMIT } from '../sources/failure-window.js';

/** A response as it arrived, and its gate verdicts (being worked out on the gate's thread). */
interface Arrived {
  data: Buffer;
  verdicts: Promise<GateBlockVerdict[]>;
}

export class FeederSource {
  readonly url: string;
  private readonly client: EntropyClient;
  /** RCT/APT and the pattern check, run on a worker thread a response at a time. */
  private gate: NativeGate;
  private readonly fips: Fips140Tester | undefined;
  /** Bytes that passed the per-block tests, waiting for a whole FIPS block. */
  private fipsStage = Buffer.alloc(0);
  /** Where fipsFilter tests and gathers a pull's blocks (grown once to a response and a block). */
  private fipsScratch = Buffer.alloc(0);
  /** The FIPS batch on the worker thread, reading fipsScratch (close waits for it before erasing). */
  private fipsTesting: Promise<unknown> | undefined;
  private failedInARow = 0;
  /**
   * Responses are decoded into these: the one being used and the one asked for ahead
   * alternate, so no 512 KiB buffer is allocated per response (see recycled-buffers.ts).
   */
  private readonly decoded = new RecycledBuffers(2 * 512 * BLOCK_SIZE);
  /** The buffer behind the last pull's result: the caller is done with it at the next pull. */
  private lastDecoded: Buffer | undefined;
  /** The next response, asked for while this one is tested (pull()'s `next`). */
  private readonly ahead = new ReadAhead((arrived: Arrived) => {
    // The gate may still be reading it: erased once it is done.
    const erase = (): void => void arrived.data.fill(0);
    arrived.verdicts.then(erase, erase);
  });
  private readonly sp800_90bRate = new FailureWindow(FAILURE_WINDOW, FAILURE_WINDOW_LIMIT);
  private readonly fipsRate = new FailureWindow(FAILURE_WINDOW, FAILURE_WINDOW_LIMIT);
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
    this.gate = this.newGate();
    this.fips = options.fips140 ? new Fips140Tester() : undefined;
    this.status = {
      url: options.url,
      state: 'active',
      bytesPulled: 0,
      bytesPassed: 0,
      bytesDropped: { 'repetition-count': 0, 'adaptive-proportion': 0, pattern: 0, fips140: 0, startup: 0, 'not-random': 0, 'out-of-service': 0 },
      bytesAwaitingFips: 0,
      failures: { 'repetition-count': 0, 'adaptive-proportion': 0, pattern: 0, fips140: 0 },
    };
  }

  /** Blocks asked for in one request. */
  get blocksPerRequest(): number {
    return this.options.blocksPerRequest;
  }

  /** Usable now: not stopped, and not inside a disable period. */
  available(now = Date.now()): boolean {
    if (this.status.state === 'stopped') return false;
    if (this.status.state === 'disabled') {
      if ((this.status.retryAt ?? 0) > now) return false;
      // Back in service: every test starts afresh, start-up tests run on its first bytes.
      this.status.state = 'active';
      delete this.status.retryAt;
      this.events.returned({ source: this.url, after: this.status.lastError ?? 'disabled' });
      this.failedInARow = 0;
      this.gate = this.newGate();
      this.sp800_90bRate.reset();
      this.fipsRate.reset();
      // FIPS 140-2 too: its continuous test and a window begun before the source went out
      // of service would otherwise join bytes from either side of the gap.
      this.fips?.reset();
      this.status.bytesDropped['out-of-service'] += this.eraseFipsStage();
    }
    return true;
  }

  /**
   * Pulls up to `maxBytes` (whole blocks, at least one; a response asked for ahead may
   * bring more) and returns what passed. Throws the client's error when it gives up
   * (400/401: the source is then stopped), or the abort reason. `next`: the bytes the
   * caller will ask for right after this pull; the request for them is then sent as soon
   * as this response has arrived, so the upstream prepares it (and the network carries
   * it) while this one is tested.
   */
  async pull(maxBytes: number, signal: AbortSignal, next = 0): Promise<Passed> {
    this.recycleLast();
    let data: Buffer;
    let tested: Promise<GateBlockVerdict[]>;
    try {
      ({ data, verdicts: tested } = await this.takeResponse(this.blocksFor(maxBytes), signal));
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
    if (this.status.state === 'retrying' && this.status.lastError !== undefined) {
      // Answering again: the old error is history, and the log says so once.
      this.events.recovered({ source: this.url, after: this.status.lastError });
      delete this.status.lastError;
    }
    this.status.state = 'active';
    this.lastDecoded = data;
    if (next >= BLOCK_SIZE) {
      const blocks = this.blocksFor(next);
      this.ahead.start((s) => this.fetchAndTest(blocks, s), signal);
    }
    this.status.bytesPulled += data.length;
    // Blocks that pass stay where they are in the response's buffer, moved up only past
    // blocks that failed: no second buffer per pull (a 512 KiB allocation, its zero fill
    // and a copy each time, which the garbage collector then had to account for).
    let passedBytes = 0;
    try {
      // The tests' state depends only on the bytes, so the whole response went through
      // them at once as it arrived, off the event loop (the linear complexities run 64
      // blocks side by side); the per-block rules below read their verdicts in stream order.
      const verdicts = await tested;
      for (let off = 0; off < data.length; off += BLOCK_SIZE) {
        const block = data.subarray(off, off + BLOCK_SIZE);
        const reason = this.testBlock(verdicts[off / BLOCK_SIZE]!);
        if (reason === undefined) {
          if (passedBytes !== off) data.copyWithin(passedBytes, off, off + BLOCK_SIZE);
          passedBytes += BLOCK_SIZE;
          continue;
        }
        this.status.bytesDropped[reason] += block.length;
        if (this.outOfService) {
          // Out of service: the rest of this response is not tested and not used.
          this.status.bytesDropped['out-of-service'] += data.length - off - BLOCK_SIZE;
          break;
        }
      }
    } catch (err) {
      data.fill(0);
      throw err;
    }
    data.fill(0, passedBytes);
    const out = data.subarray(0, passedBytes);
    if (this.untrusted) return this.distrust(out);
    const result = this.fips ? await this.fipsFilter(out) : out;
    if (this.untrusted) return this.distrust(result);
    this.status.bytesPassed += result.length;
    // Back in service after a disable period, and its bytes pass again: the reason it was
    // disabled is history.
    if (result.length > 0 && this.status.state === 'active') delete this.status.lastError;
    return result;
  }

  private blocksFor(bytes: number): number {
    return Math.max(1, Math.min(this.options.blocksPerRequest, Math.floor(bytes / BLOCK_SIZE)));
  }

  /** The response asked for ahead, whatever its size, or a new request for `blocks`. */
  private takeResponse(blocks: number, signal: AbortSignal): Promise<Arrived> {
    return this.ahead.take() ?? this.fetchAndTest(blocks, signal);
  }

  /**
   * Requests `blocks` and hands the response to the gate the moment it arrives: a response
   * asked for ahead is then tested on the gate's thread while the event loop (and the FIPS
   * tests' thread) still work on the one before it. Responses reach the gate in the order
   * they are taken, since the one ahead is asked for only once the one before has arrived.
   */
  private async fetchAndTest(blocks: number, signal: AbortSignal): Promise<Arrived> {
    const data = await this.client.fetch(blocks, { signal, into: this.decodeTarget });
    const verdicts = this.gate.test(data);
    verdicts.catch(() => {}); // the taker's error, when it awaits them
    return { data, verdicts };
  }

  private readonly decodeTarget = (bytes: number): Buffer => this.decoded.acquire(bytes);

  /** The last pull's buffer goes back for reuse (erased again: its caller erased what it used). */
  private recycleLast(): void {
    if (this.lastDecoded) this.decoded.release(this.lastDecoded);
    this.lastDecoded = undefined;
  }

  private get outOfService(): boolean {
    return this.status.state === 'disabled';
  }

  /** Set when the source was found not random during the pull in progress. */
  private untrusted = false;

  private newGate(): NativeGate {
    return new NativeGate({ minEntropy: this.options.minEntropyPerByte, alphaLog2: 20 });
  }

  /**
   * Applies one 1,024-byte block's verdicts (SP 800-90B RCT/APT, then the pattern check);
   * why it is dropped, if it is. (The gate also flags a block equal to the one before;
   * here the pattern check, which finds any repeat in its history, is the one that counts.)
   */
  private testBlock(verdict: GateBlockVerdict): DropReason | undefined {
    if (!verdict.healthPassed) {
      const test = verdict.test ?? 'repetition-count';
      const detail = verdict.detail ?? 'failed';
      this.fail(test, detail);
      const limitReached = this.sp800_90bRate.record(true);
      if (++this.failedInARow >= this.options.failureLimit) {
        this.disable(`${this.failedInARow} blocks in a row failed the SP 800-90B health tests (last: ${detail})`);
      } else if (limitReached) {
        this.notRandom(
          `${this.sp800_90bRate.failures} of its last ${this.sp800_90bRate.count} 1,024-byte blocks failed the SP 800-90B health tests ` +
            '(a random source fails about 1 in 25,000, and 1 in 1,000 at most by design)',
        );
      }
      return test;
    }
    this.sp800_90bRate.record(false);
    this.failedInARow = 0;
    if (!verdict.patternPassed) {
      // The pattern check has no false alarms to speak of (below 2^-60 a block): one
      // failure shows the source is deterministic.
      const message = verdict.patternMessage ?? 'pattern found';
      this.fail('pattern', message);
      this.notRandom(message);
      return 'pattern';
    }
    // Start-up: these samples only prove the source works; they are not used.
    if (!verdict.ready) return 'startup';
    return undefined;
  }

  /**
   * Runs the FIPS 140-2 tests on whole 2,500-byte blocks; the rest waits for the next pull.
   * The blocks are tested in one scratch buffer, kept from pull to pull, and the passing
   * ones moved up in it: the result is a view of it, the caller's until its next pull
   * (two fresh buffers per response had made the garbage collector a fifth of the work).
   * The tests run on a worker thread, a pull's blocks in one batch: one at a time on the
   * event loop they held it 3-9 ms per 512 KiB response.
   */
  private async fipsFilter(fresh: Buffer): Promise<Buffer> {
    const length = this.fipsStage.length + fresh.length;
    if (this.fipsScratch.length < length) {
      this.fipsScratch.fill(0);
      this.fipsScratch = Buffer.alloc(length);
    }
    const staged = this.fipsScratch.subarray(0, length);
    this.fipsStage.copy(staged, 0);
    fresh.copy(staged, this.fipsStage.length);
    this.fipsStage.fill(0);
    fresh.fill(0);
    const whole = staged.length - (staged.length % FIPS140_BLOCK_BYTES);
    let outBytes = 0;
    let off = 0;
    if (whole > 0) {
      const testing = this.fips!.testBlocks(staged.subarray(0, whole));
      this.fipsTesting = testing;
      let verdicts: Fips140BatchResult;
      try {
        verdicts = await testing;
      } catch (err) {
        staged.fill(0);
        this.eraseFipsStage();
        throw err;
      } finally {
        this.fipsTesting = undefined;
      }
      let nextFailure = 0;
      // The verdicts apply in stream order, as if each block had been tested in turn: the
      // blocks after the one that shows the source is not random count as untested.
      for (; off < whole; off += FIPS140_BLOCK_BYTES) {
        const passed = verdicts.passed[off / FIPS140_BLOCK_BYTES] === 1;
        const limitReached = this.fipsRate.record(!passed);
        if (passed) {
          if (outBytes !== off) staged.copyWithin(outBytes, off, off + FIPS140_BLOCK_BYTES);
          outBytes += FIPS140_BLOCK_BYTES;
          continue;
        }
        this.status.bytesDropped.fips140 += FIPS140_BLOCK_BYTES;
        this.fail('fips140', verdicts.failures[nextFailure++]!.message);
        if (limitReached) {
          this.notRandom(
            `${this.fipsRate.failures} of its last ${this.fipsRate.count} 2,500-byte blocks failed the FIPS 140-2 tests ` +
              '(a random source fails about 1 in 1,250)',
          );
          off += FIPS140_BLOCK_BYTES;
          break;
        }
      }
    }
    // What was not tested (a partial block, or the rest after the source was found not
    // random) waits for the next pull; distrust() drops it.
    this.fipsStage = Buffer.from(staged.subarray(off));
    this.status.bytesAwaitingFips = this.fipsStage.length;
    staged.fill(0, outBytes);
    return staged.subarray(0, outBytes);
  }

  private fail(test: HealthTestName, detail: string): void {
    this.status.failures[test] += 1;
    this.events.blockFailed({ source: this.url, test, detail });
  }

  /** Takes the source out of service as not random: nothing it delivered may be used. */
  private notRandom(why: string): void {
    this.untrusted = true;
    const reason = `not random: ${why}`;
    this.disable(reason);
    this.events.untrusted({ source: this.url, reason });
  }

  /** Erases the bytes waiting for a whole FIPS 140-2 block; returns how many there were. */
  private eraseFipsStage(): number {
    const erased = this.fipsStage.length;
    this.fipsStage.fill(0);
    this.fipsStage = Buffer.alloc(0);
    this.status.bytesAwaitingFips = 0;
    return erased;
  }

  /** Drops what this pull passed and what waits for a FIPS block (the source was found not random). */
  private distrust(result: Buffer): Buffer {
    this.untrusted = false;
    this.status.bytesDropped['not-random'] += result.length + this.eraseFipsStage();
    result.fill(0);
    return Buffer.alloc(0);
  }

  private disable(reason: string): void {
    // Nothing more from this source until it returns to service (and a retry of the
    // request ahead must not report the source as merely retrying).
    this.ahead.drop();
    const retryAt = Date.now() + this.options.retryAfterMs;
    this.status.state = 'disabled';
    this.status.retryAt = retryAt;
    this.status.lastError = reason;
    this.events.disabled({ source: this.url, reason, retryAt });
  }

  async close(): Promise<void> {
    this.ahead.drop();
    this.recycleLast();
    await this.fipsTesting?.catch(() => undefined);
    this.fipsScratch.fill(0);
    this.fipsStage.fill(0);
    await this.client.close();
  }
}
