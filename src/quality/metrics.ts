// Prometheus metrics of the quality role, read from storage at scrape time.
import { Gauge, Registry } from 'prom-client';

import type { QualityStore } from './store.js';

/** Runs looked at for the newest one that carries a min-entropy (error runs carry none). */
const LOOKBACK_RUNS = 20;

export function createQualityMetrics(store: QualityStore): Registry {
  const registry = new Registry();
  new Gauge({
    name: 'qentropy_quality_min_entropy_bits',
    help: 'SP 800-90B min-entropy of the newest quality run, bits per byte (original, assessed) or per bit (bitstring)',
    labelNames: ['estimate'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const latest = (await store.listRuns(LOOKBACK_RUNS)).find((r) => r.minEntropy !== null)?.minEntropy;
      if (!latest) return;
      this.set({ estimate: 'original' }, latest.h_original);
      this.set({ estimate: 'bitstring' }, latest.h_bitstring);
      this.set({ estimate: 'assessed' }, latest.assessed);
    },
  });
  return registry;
}
