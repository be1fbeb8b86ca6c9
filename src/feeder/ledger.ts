// Counters per process life. A SIGHUP reload replaces the Feeder (new sources, new sinks),
// but Prometheus counters may only go back to zero when the process restarts, and the
// uptime `feeder status` shows is the process's. The role keeps one ledger for its whole
// life: a stopping feeder leaves its totals here, and the next one starts from them, per
// source URL and per sink name (a source or sink removed and added back later continues
// from where it was).
import type { SinkStatus } from './status.js';
import type { SourceStatus } from './source.js';

type SourceCounters = Pick<SourceStatus, 'bytesPulled' | 'bytesPassed' | 'bytesDropped' | 'failures'>;
type SinkCounters = Pick<SinkStatus, 'feeds' | 'bytesFed' | 'creditedBits' | 'errors'>;

export class FeederLedger {
  /** When the process (not the current Feeder) started. */
  readonly startedAt: number;
  bufferBytesDiscarded = 0;
  /** The combining mode's counters. */
  combine = { outputs: 0, dropOuts: 0 };
  private readonly sources = new Map<string, SourceCounters>();
  private readonly sinks = new Map<string, SinkCounters>();

  constructor(startedAt = Date.now()) {
    this.startedAt = startedAt;
  }

  /** Remembers a stopping feeder's totals (they replace what was remembered: totals, not deltas). */
  record(sources: readonly SourceStatus[], sinks: readonly SinkStatus[], bufferBytesDiscarded: number): void {
    this.bufferBytesDiscarded = bufferBytesDiscarded;
    for (const s of sources) {
      this.sources.set(s.url, { bytesPulled: s.bytesPulled, bytesPassed: s.bytesPassed, bytesDropped: { ...s.bytesDropped }, failures: { ...s.failures } });
    }
    for (const k of sinks) this.sinks.set(k.name, { feeds: k.feeds, bytesFed: k.bytesFed, creditedBits: k.creditedBits, errors: k.errors });
  }

  /** Continues a starting source's counters from what an earlier feeder left. */
  restoreSource(status: SourceStatus): void {
    const before = this.sources.get(status.url);
    if (!before) return;
    status.bytesPulled = before.bytesPulled;
    status.bytesPassed = before.bytesPassed;
    status.bytesDropped = { ...before.bytesDropped };
    status.failures = { ...before.failures };
  }

  /** Continues a starting sink's counters from what an earlier feeder left. */
  restoreSink(status: SinkStatus): void {
    const before = this.sinks.get(status.name);
    if (!before) return;
    Object.assign(status, before);
  }
}
