// Prometheus metrics of the entropy role. One registry per app, so several instances in
// one process (tests) never mix their numbers. Live values (pool level, source health)
// are read at scrape time.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

import type { EntropyPool } from '../pool/pool.js';
import type { SourceHealth, SourceState } from '../sources/types.js';

const STATES: SourceState[] = ['starting', 'ok', 'degraded', 'failed'];

export interface EntropyMetrics {
  registry: Registry;
  requests: Counter<'route' | 'status'>;
  bytesServed: Counter<'route'>;
}

export function createEntropyMetrics(
  pool: EntropyPool,
  sourceHealth: () => SourceHealth,
  options: { processMetrics?: boolean } = {},
): EntropyMetrics {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'qentropy_' });

  const requests = new Counter({
    name: 'qentropy_entropy_requests_total',
    help: 'HTTP requests answered, by route and status code',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  });
  const bytesServed = new Counter({
    name: 'qentropy_entropy_bytes_served_total',
    help: 'Entropy bytes handed to clients, by route',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'qentropy_pool_level_bytes',
    help: 'Bytes of entropy waiting in the supply pool',
    registers: [registry],
    collect() {
      this.set(pool.level);
    },
  });
  new Gauge({
    name: 'qentropy_pool_capacity_bytes',
    help: 'Capacity of the supply pool',
    registers: [registry],
    collect() {
      this.set(pool.capacity);
    },
  });
  new Gauge({
    name: 'qentropy_pool_shortfalls',
    help: 'Requests the pool could not satisfy (answered 503) since start',
    registers: [registry],
    collect() {
      this.set(pool.stats().shortfalls);
    },
  });
  new Gauge({
    name: 'qentropy_pool_bytes_to_quality',
    help: 'Bytes drawn from the pool by the quality tests since start (never served to clients)',
    registers: [registry],
    collect() {
      this.set(pool.stats().bytesToQuality);
    },
  });
  new Gauge({
    name: 'qentropy_source_state',
    help: 'Health state of the entropy source (1 for the current state)',
    labelNames: ['source', 'state'] as const,
    registers: [registry],
    collect() {
      const health = sourceHealth();
      for (const state of STATES) this.set({ source: health.name, state }, health.state === state ? 1 : 0);
    },
  });
  new Gauge({
    name: 'qentropy_source_development',
    help: '1 when the source is the development-only OS CSPRNG',
    labelNames: ['source'] as const,
    registers: [registry],
    collect() {
      const health = sourceHealth();
      this.set({ source: health.name }, health.development ? 1 : 0);
    },
  });
  new Gauge({
    name: 'qentropy_source_blocks_failed',
    help: '1,024-byte blocks dropped because they failed a health test, since start',
    labelNames: ['source'] as const,
    registers: [registry],
    collect() {
      const health = sourceHealth();
      this.set({ source: health.name }, health.blocksFailed);
    },
  });
  new Gauge({
    name: 'qentropy_health_test_failures',
    help: 'Health-test failures by test, since start',
    labelNames: ['source', 'test'] as const,
    registers: [registry],
    collect() {
      const health = sourceHealth();
      this.reset();
      for (const [test, count] of Object.entries(health.testFailures)) this.set({ source: health.name, test }, count);
    },
  });
  new Gauge({
    name: 'qentropy_source_read_errors',
    help: 'Failed reads from the source, since start',
    labelNames: ['source'] as const,
    registers: [registry],
    collect() {
      const health = sourceHealth();
      this.set({ source: health.name }, health.readErrors);
    },
  });
  return { registry, requests, bytesServed };
}
