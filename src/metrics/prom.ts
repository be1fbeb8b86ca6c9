// The parts of prom-client a daemon uses, without the rest. prom-client's index loads all of
// it at once: the default process metrics (perf_hooks, v8, the GC observer), histograms,
// summaries (tdigest), the Pushgateway (http/https) and the cluster aggregator. A
// feeder-only daemon needs a Registry, counters and gauges; importing them from their own
// files keeps the others unloaded (docs/feeder.md, "Memory"). The classes are the same
// objects the index exports (one CommonJS module cache), so registries mix freely.
import { createRequire } from 'node:module';

import type * as Prom from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry = require('prom-client/lib/registry') as typeof Prom.Registry;
export const Counter = require('prom-client/lib/counter') as typeof Prom.Counter;
export const Gauge = require('prom-client/lib/gauge') as typeof Prom.Gauge;
export type Registry = Prom.Registry;

/** prom-client's default process metrics, loaded only when asked for. */
export function collectDefaultMetrics(config: Prom.DefaultMetricsCollectorConfiguration<Prom.RegistryContentType>): void {
  (require('prom-client/lib/defaultMetrics') as typeof Prom.collectDefaultMetrics)(config);
}
