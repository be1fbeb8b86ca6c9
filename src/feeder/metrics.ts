// Prometheus metrics of the feeder, read from its live status at scrape time. One registry
// per feeder (tests run several in one process); the daemon serves it on /metrics.
import { collectDefaultMetrics, Counter, Gauge, Registry } from '../metrics/prom.js';

import type { FeederStatus, SinkState } from './status.js';

const SINK_STATES: SinkState[] = ['starting', 'ok', 'waiting', 'failing', 'idle', 'disabled'];
const SOURCE_STATES = ['active', 'retrying', 'disabled', 'stopped'] as const;

export function createFeederMetrics(status: () => FeederStatus, options: { processMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'qentropy_feeder_' });
  const counter = (name: string, help: string, labelNames: string[], read: (s: FeederStatus, set: (labels: Record<string, string>, v: number) => void) => void): void => {
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        read(status(), (labels, v) => this.inc(labels, v));
      },
    });
  };
  const gauge = (name: string, help: string, labelNames: string[], read: (s: FeederStatus, set: (labels: Record<string, string>, v: number) => void) => void): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        read(status(), (labels, v) => this.set(labels, v));
      },
    });
  };

  counter('qentropy_feeder_bytes_pulled_total', 'Bytes received from entropy APIs (before health tests)', ['source'], (s, set) => {
    for (const src of s.sources) set({ source: src.url }, src.bytesPulled);
  });
  counter('qentropy_feeder_bytes_passed_total', 'Bytes that passed every health test and went to the buffer', ['source'], (s, set) => {
    for (const src of s.sources) set({ source: src.url }, src.bytesPassed);
  });
  counter('qentropy_feeder_bytes_dropped_total', 'Pulled bytes not used, by reason (the test that failed them, startup, not-random, out-of-service)', ['source', 'reason'], (s, set) => {
    for (const src of s.sources) for (const [reason, n] of Object.entries(src.bytesDropped)) set({ source: src.url, reason }, n);
  });
  counter('qentropy_feeder_health_failures_total', 'Failed test verdicts by test (1,024-byte blocks; FIPS 140-2: 2,500-byte blocks)', ['source', 'test'], (s, set) => {
    for (const src of s.sources) for (const [test, n] of Object.entries(src.failures)) set({ source: src.url, test }, n);
  });
  counter('qentropy_feeder_buffer_bytes_discarded_total', 'Bytes zeroed out of the buffer because a source found not random had filled it', [], (s, set) => {
    set({}, s.buffer.bytesDiscarded);
  });
  gauge('qentropy_feeder_source_state', 'State of each entropy source (1 for the current state)', ['source', 'state'], (s, set) => {
    for (const src of s.sources) for (const state of SOURCE_STATES) set({ source: src.url, state }, src.state === state ? 1 : 0);
  });
  counter('qentropy_feeder_bytes_fed_total', 'Bytes handed to each sink', ['sink', 'kind'], (s, set) => {
    for (const sink of s.sinks) set({ sink: sink.name, kind: sink.kind }, sink.bytesFed);
  });
  counter('qentropy_feeder_feeds_total', 'Successful feeds per sink', ['sink', 'kind'], (s, set) => {
    for (const sink of s.sinks) set({ sink: sink.name, kind: sink.kind }, sink.feeds);
  });
  counter('qentropy_feeder_credited_bits_total', 'Entropy bits credited to the kernel pool', ['sink'], (s, set) => {
    for (const sink of s.sinks) if (sink.kind === 'kernel') set({ sink: sink.name }, sink.creditedBits);
  });
  counter('qentropy_feeder_sink_errors_total', 'Failed feeds or opens per sink', ['sink', 'kind'], (s, set) => {
    for (const sink of s.sinks) set({ sink: sink.name, kind: sink.kind }, sink.errors);
  });
  gauge('qentropy_feeder_sink_state', 'State of each sink (1 for the current state)', ['sink', 'state'], (s, set) => {
    for (const sink of s.sinks) for (const state of SINK_STATES) set({ sink: sink.name, state }, sink.state === state ? 1 : 0);
  });
  gauge(
    'qentropy_feeder_sink_last_error',
    'Unix time of the last error of each sink; the label carries its code and message',
    ['sink', 'code', 'message'],
    (s, set) => {
      for (const sink of s.sinks) {
        if (sink.lastErrorAt === undefined) continue;
        set({ sink: sink.name, code: sink.lastErrorCode ?? '', message: (sink.lastError ?? '').slice(0, 200) }, sink.lastErrorAt / 1000);
      }
    },
  );
  // The combining mode (absent in failover).
  gauge('qentropy_feeder_combine_sources_in_use', 'Sources whose bytes go into each combined output (combining mode)', [], (s, set) => {
    if (s.combine) set({}, s.combine.inUse.length);
  });
  gauge('qentropy_feeder_combine_stopped', '1 while combining is stopped because a source dropped out and feeder.onDropOut is "stop"', [], (s, set) => {
    if (s.combine) set({}, s.combine.state === 'combining' ? 0 : 1);
  });
  gauge('qentropy_feeder_combine_credit_bits_per_byte', 'Entropy credit per byte of a combined output from the sources in use (SP 800-90B 3.1.5.1.2)', [], (s, set) => {
    if (s.combine) set({}, s.combine.credit.creditBitsPerByte);
  });
  counter('qentropy_feeder_combine_outputs_total', 'Conditioned 32-byte outputs made (combining mode)', [], (s, set) => {
    if (s.combine) set({}, s.combine.outputs);
  });
  counter('qentropy_feeder_combine_dropouts_total', 'Times a source left the combination (combining mode)', [], (s, set) => {
    if (s.combine) set({}, s.combine.dropOuts);
  });
  gauge('qentropy_feeder_buffer_level_bytes', 'Bytes that passed the health tests, waiting for a sink', [], (s, set) => set({}, s.buffer.level));
  gauge('qentropy_feeder_buffer_capacity_bytes', 'Capacity of the feeder buffer', [], (s, set) => set({}, s.buffer.capacity));
  gauge('qentropy_feeder_buffer_locked', '1 when the buffer is locked in memory (mlock)', [], (s, set) => set({}, s.buffer.locked ? 1 : 0));
  return registry;
}
