// The feeder pipeline: pull (client, retry policy, strict decoding) -> health tests on
// every block -> a bounded buffer -> sinks, each on its own timer. Bytes are taken out of
// the buffer, so each byte reaches one sink once; nothing that failed a test is ever
// buffered. During an upstream outage the sinks go on from the buffer until it runs dry,
// then wait for it to refill.
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

import { BLOCK_SIZE } from '../client/index.js';
import type { FeedBuffer } from './buffer.js';
import { CreditQueue, SourceCombiner, type DropOutPolicy } from './combiner.js';
import { CONDITIONED_BYTES } from './conditioning.js';
import { FeederLedger } from './ledger.js';
import { createFeederMetrics } from './metrics.js';
import { SinkError, type Sink } from './sinks/types.js';
import { FeederSource, type FeederSourceOptions } from './source.js';
import type { FeederStatus, SinkStatus } from './status.js';

export interface FeederOptions {
  sources: FeederSourceOptions[];
  sinks: Sink[];
  buffer: FeedBuffer;
  logger: Logger;
  /** Least wait before opening a sink again after it failed to open (default 30 s). */
  reopenAfterMs?: number;
  processMetrics?: boolean;
  /**
   * Counters and start time of the process (kept by the role across reloads). Without
   * one, this feeder's own: its counters start at zero.
   */
  ledger?: FeederLedger;
  /** The combining mode (`feeder.combine: "all"`): every source in each output. Absent: failover. */
  combine?: { onDropOut: DropOutPolicy };
}

interface SinkEntry {
  sink: Sink;
  status: SinkStatus;
  opened: boolean;
  nextOpenAt: number;
  /** The last error message logged, so a repeating failure is logged once. */
  logged?: string;
  wake?: () => void;
  unwatch?: () => void;
}

export class Feeder {
  readonly sources: FeederSource[];
  readonly buffer: FeedBuffer;
  readonly registry: Registry;
  private readonly logger: Logger;
  private readonly entries: SinkEntry[];
  private readonly abort = new AbortController();
  private loops: Promise<void>[] = [];
  private readonly ledger: FeederLedger;
  private running = false;
  private readonly reopenAfterMs: number;
  /** Set in the combining mode. */
  private readonly combiner: SourceCombiner | undefined;
  /** The combining mode's credit of each byte in the buffer. */
  private readonly credits = new CreditQueue();

  constructor(options: FeederOptions) {
    this.logger = options.logger;
    this.buffer = options.buffer;
    this.reopenAfterMs = options.reopenAfterMs ?? 30_000;
    this.ledger = options.ledger ?? new FeederLedger();
    // Every change of a source's state may change the combination (combining mode).
    const changed = (): void => this.combiner?.sourceChanged();
    this.sources = options.sources.map(
      (o) =>
        new FeederSource(o, {
          blockFailed: (e) => this.logger.warn(e, 'block failed a health test and was dropped'),
          disabled: (e) => {
            this.logger.error({ ...e, retryAt: new Date(e.retryAt).toISOString() }, `entropy source disabled: ${e.reason}; trying it again later`);
            changed();
          },
          untrusted: (e) => {
            this.combiner?.distrust(e.source);
            this.discardBuffer();
          },
          stopped: (e) => {
            this.logger.error(e, `entropy source stopped: ${e.reason}`);
            changed();
          },
          retrying: (e) => {
            this.logger.warn(e, 'entropy source unavailable; retrying');
            changed();
          },
          recovered: (e) => {
            this.logger.info(e, 'entropy source recovered');
            changed();
          },
          returned: (e) => {
            this.logger.info(e, `entropy source back in service after being disabled (${e.after}); its first blocks run the start-up tests`);
            changed();
          },
        }),
    );
    this.combiner = options.combine
      ? new SourceCombiner(
          this.sources,
          options.sources.map((o) => o.assessedMinEntropyPerByte ?? 0),
          options.combine.onDropOut,
          this.logger,
        )
      : undefined;
    this.entries = options.sinks.map((sink) => ({
      sink,
      opened: false,
      nextOpenAt: 0,
      status: { name: sink.name, kind: sink.kind, state: 'starting', intervalMs: sink.intervalMs, feeds: 0, bytesFed: 0, creditedBits: 0, errors: 0 },
    }));
    const names = new Set<string>();
    for (const e of this.entries) {
      if (names.has(e.sink.name)) throw new Error(`two sinks are both named ${e.sink.name}`);
      names.add(e.sink.name);
    }
    this.registry = createFeederMetrics(() => this.statusNow(), { processMetrics: options.processMetrics ?? false });
  }

  /** Opens the sinks (a failure is logged and retried, never fatal) and starts pulling and feeding. */
  async start(): Promise<void> {
    this.running = true;
    // Restored at start, not at construction: on a reload the old feeder stops (and
    // records its final totals) after the new one is built.
    for (const s of this.sources) this.ledger.restoreSource(s.status);
    for (const e of this.entries) this.ledger.restoreSink(e.status);
    this.bufferBytesDiscarded = this.ledger.bufferBytesDiscarded;
    // Bytes left in the buffer by an earlier feeder (a reload) have no known combined credit.
    if (this.combiner) {
      this.credits.push(this.buffer.level, 0);
      this.combiner.status.outputs = this.ledger.combine.outputs;
      this.combiner.status.dropOuts = this.ledger.combine.dropOuts;
    }
    if (!this.buffer.lock.locked) this.logger.warn({ reason: this.buffer.lock.reason }, 'feeder buffer is not locked in memory');
    await Promise.all(this.entries.map((e) => this.open(e)));
    this.loops = [this.combiner ? this.combineLoop(this.combiner) : this.pullLoop(), ...this.entries.map((e) => this.sinkLoop(e))];
    this.logger.info(
      {
        sources: this.sources.map((s) => s.url),
        combine: this.combiner ? 'all' : 'failover',
        ...(this.combiner ? { creditBitsPerByte: this.combiner.status.credit.creditBitsPerByte } : {}),
        sinks: this.entries.map((e) => e.sink.name),
        bufferBytes: this.buffer.capacity,
        locked: this.buffer.lock.locked,
      },
      'feeder running',
    );
  }

  /** Stops pulling, lets feeds in flight finish (a file write lands whole), closes sinks and sources. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.abort.abort(new Error('feeder stopping'));
    for (const e of this.entries) e.wake?.();
    await Promise.all(this.loops);
    for (const e of this.entries) {
      e.unwatch?.();
      await e.sink.close().catch((err: Error) => this.logger.warn({ sink: e.sink.name, err: err.message }, 'sink did not close cleanly'));
    }
    this.ledger.record(
      this.sources.map((s) => s.status),
      this.entries.map((e) => e.status),
      this.bufferBytesDiscarded,
    );
    if (this.combiner) this.ledger.combine = { outputs: this.combiner.status.outputs, dropOuts: this.combiner.status.dropOuts };
    await Promise.all(this.sources.map((s) => s.close().catch(() => undefined)));
  }

  /** Live status without sink details (cheap; used by metrics). */
  statusNow(): FeederStatus {
    const healthFailures: FeederStatus['healthFailures'] = { 'repetition-count': 0, 'adaptive-proportion': 0, pattern: 0, fips140: 0 };
    let bytesPulled = 0;
    let bytesPassed = 0;
    for (const s of this.sources) {
      bytesPulled += s.status.bytesPulled;
      bytesPassed += s.status.bytesPassed;
      for (const k of Object.keys(healthFailures) as Array<keyof typeof healthFailures>) healthFailures[k] += s.status.failures[k];
    }
    return {
      pid: process.pid,
      startedAt: this.ledger.startedAt,
      updatedAt: Date.now(),
      running: this.running,
      buffer: {
        level: this.buffer.level,
        capacity: this.buffer.capacity,
        lowWater: this.buffer.lowWater,
        locked: this.buffer.lock.locked,
        ...(this.buffer.lock.reason ? { lockReason: this.buffer.lock.reason } : {}),
        bytesDiscarded: this.bufferBytesDiscarded,
      },
      bytesPulled,
      bytesPassed,
      healthFailures,
      sources: this.sources.map((s) => ({ ...s.status, bytesDropped: { ...s.status.bytesDropped }, failures: { ...s.status.failures } })),
      sinks: this.entries.map((e) => ({ ...e.status })),
      ...(this.combiner ? { combine: structuredClone(this.combiner.status) } : {}),
    };
  }

  /** Status with each sink's details (PKCS#11 slots, kernel entropy count). */
  async status(): Promise<FeederStatus> {
    const status = this.statusNow();
    await Promise.all(
      this.entries.map(async (e, i) => {
        if (!e.opened || !e.sink.details) return;
        const details = await e.sink.details().catch(() => undefined);
        if (details) status.sinks[i]!.details = details;
      }),
    );
    return status;
  }

  /**
   * A source was found not random: what it put in the buffer earlier passed the tests one
   * block at a time but came from the same deterministic stream. The buffer does not
   * know which source each byte came from, so it is emptied (zeroed) entirely.
   */
  private discardBuffer(): void {
    const level = this.buffer.level;
    if (level === 0) return;
    this.bufferBytesDiscarded += level;
    this.buffer.clear();
    this.credits.clear();
    this.logger.warn({ bytes: level }, 'buffer emptied: it held bytes from a source found not random');
  }
  private bufferBytesDiscarded = 0;

  private get signal(): AbortSignal {
    return this.abort.signal;
  }

  private async pullLoop(): Promise<void> {
    let filling = true;
    while (!this.signal.aborted) {
      if (this.buffer.level < this.buffer.lowWater) filling = true;
      if (!filling || this.buffer.room < BLOCK_SIZE) {
        filling = false;
        await this.buffer.changed(this.signal);
        continue;
      }
      const source = this.sources.find((s) => s.available());
      if (!source) {
        await this.waitForSource();
        continue;
      }
      try {
        // With room for more than this pull, the next request goes out while this one is tested.
        const room = this.buffer.room;
        const passed = await source.pull(room, this.signal, room - source.blocksPerRequest * BLOCK_SIZE);
        await this.putAll(passed);
      } catch {
        // Logged by the source's events; a stopped source is skipped from now on.
        if (this.signal.aborted) break;
      }
    }
  }

  /** The combining mode: conditioned outputs of all sources in use, with their credit. */
  private async combineLoop(combiner: SourceCombiner): Promise<void> {
    let filling = true;
    const room = (): number => {
      if (this.buffer.level < this.buffer.lowWater) filling = true;
      if (this.buffer.room < CONDITIONED_BYTES) filling = false;
      return filling ? this.buffer.room : 0;
    };
    const put = async (output: Buffer, credit: number): Promise<void> => {
      this.credits.push(output.length, credit);
      await this.putAll(output);
    };
    await combiner.run(put, room, (signal) => this.buffer.changed(signal), this.signal);
  }

  /**
   * Puts every passed byte into the buffer, waiting for room when needed: with FIPS 140-2
   * a pull can release bytes held from earlier responses, so it may return more than the
   * room it was asked for, and those bytes are already counted as passed. Bytes still
   * outside when the feeder stops are counted as discarded, so the byte accounting holds.
   */
  private async putAll(passed: Buffer): Promise<void> {
    let rest = passed;
    while (rest.length > 0 && !this.signal.aborted) {
      rest = rest.subarray(this.buffer.put(rest));
      if (rest.length > 0) await this.buffer.changed(this.signal);
    }
    this.bufferBytesDiscarded += rest.length;
    passed.fill(0);
  }

  /** Waits until a disabled source may be tried again (or forever, if all are stopped). */
  private async waitForSource(): Promise<void> {
    const retryAts = this.sources.filter((s) => s.status.state === 'disabled').map((s) => s.status.retryAt ?? 0);
    if (retryAts.length === 0) {
      if (!this.loggedNoSource) this.logger.error('no entropy source can be used: sinks are fed from the buffer until it runs dry');
      this.loggedNoSource = true;
    }
    const wait = retryAts.length > 0 ? Math.max(0, Math.min(...retryAts) - Date.now()) : Number.POSITIVE_INFINITY;
    await delay(wait, this.signal);
  }
  private loggedNoSource = false;

  private async open(entry: SinkEntry): Promise<boolean> {
    try {
      await entry.sink.open();
      entry.opened = true;
      entry.status.state = 'ok';
      entry.logged = undefined;
      if (entry.sink.watch) entry.unwatch = entry.sink.watch(() => entry.wake?.());
      return true;
    } catch (err) {
      entry.nextOpenAt = Date.now() + Math.max(this.reopenAfterMs, entry.sink.intervalMs);
      this.recordError(entry, err, 'cannot open sink');
      return false;
    }
  }

  private async sinkLoop(entry: SinkEntry): Promise<void> {
    const { sink, status } = entry;
    let first = true;
    while (!this.signal.aborted) {
      if (!first && (sink.intervalMs > 0 || !entry.opened || status.state === 'idle')) {
        await delay(sink.intervalMs > 0 ? sink.intervalMs : 1_000, this.signal, (wake) => (entry.wake = wake));
      }
      first = false;
      if (this.signal.aborted) break;
      if (status.state === 'disabled') {
        await delay(Number.POSITIVE_INFINITY, this.signal);
        break;
      }
      if (!entry.opened) {
        if (Date.now() < entry.nextOpenAt || !(await this.open(entry))) continue;
      }
      const want = sink.wants();
      if (want <= 0) {
        status.state = 'idle';
        continue;
      }
      while (this.buffer.level === 0 && !this.signal.aborted) {
        status.state = 'waiting';
        await this.buffer.changed(this.signal);
      }
      if (this.signal.aborted) break;
      const bytes = this.buffer.take(want);
      const credit = this.combiner ? (this.credits.take(bytes.length) ?? 0) : undefined;
      try {
        const outcome = await sink.feed(bytes, credit);
        status.feeds += 1;
        status.bytesFed += outcome.bytes;
        status.creditedBits += outcome.creditedBits ?? 0;
        status.lastFeedAt = Date.now();
        status.state = sink.wants() > 0 ? 'ok' : 'idle';
        if (entry.logged) {
          this.logger.info({ sink: sink.name }, 'sink recovered');
          entry.logged = undefined;
        }
        this.logger.debug({ sink: sink.name, bytes: outcome.bytes }, 'fed');
      } catch (err) {
        this.recordError(entry, err, 'feed failed');
        if (err instanceof SinkError && err.permanent) {
          status.state = 'disabled';
          entry.opened = false;
          await sink.close().catch(() => undefined);
        }
      } finally {
        bytes.fill(0);
      }
    }
  }

  private recordError(entry: SinkEntry, err: unknown, what: string): void {
    const message = err instanceof Error ? err.message : String(err);
    const code = err instanceof SinkError ? err.code : 'ERROR';
    const permanent = err instanceof SinkError && err.permanent;
    const { status } = entry;
    status.errors += 1;
    status.lastError = message;
    status.lastErrorCode = code;
    status.lastErrorAt = Date.now();
    status.state = permanent ? 'disabled' : 'failing';
    // Once per distinct problem: a sink retried every 10 s must not flood the log.
    if (entry.logged !== message) {
      entry.logged = message;
      const fields = { sink: entry.sink.name, code, err: message };
      if (permanent) this.logger.error(fields, `${what}; sink disabled until the config is reloaded (the other sinks go on)`);
      else this.logger.error(fields, `${what}; will retry (the other sinks go on)`);
    }
  }
}

/** Waits `ms` (Infinity: until aborted); `onWake` receives a function that ends the wait early. */
function delay(ms: number, signal: AbortSignal, onWake?: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      if (timer) clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    if (Number.isFinite(ms)) timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    onWake?.(done);
  });
}
