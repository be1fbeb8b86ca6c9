// Prometheus metrics of the quality role, read from storage at scrape time, so they cover
// every run in the store (the daemon's scheduled runs, `qentropy quality run`, another
// daemon on the same PostgreSQL). docs/quality.md "Metrics and alerts" lists them with
// example alerting rules.
import { Counter, Gauge, Registry } from 'prom-client';

import type { QualityStore, RunRow } from './store.js';

/** Runs looked at for the newest tested one and the newest with a min-entropy. */
const LOOKBACK_RUNS = 20;

const OUTCOMES = ['passed', 'failed', 'error'] as const;
type Outcome = (typeof OUTCOMES)[number];

export interface QualityMetricsOptions {
  /** The schedule's interval, exported so that "no run for two intervals" needs no constant. */
  intervalSeconds?: number;
}

export interface QualityMetrics {
  readonly contentType: string;
  /** Reads the store and renders the exposition text. */
  metrics(): Promise<string>;
}

function outcomeOf(run: RunRow): Outcome {
  if (run.status === 'error' || !run.record) return 'error';
  return run.record.tests_passed ? 'passed' : 'failed';
}

export function createQualityMetrics(store: QualityStore, options: QualityMetricsOptions = {}): QualityMetrics {
  const registry = new Registry();
  const registers = [registry];
  const minEntropy = new Gauge({
    name: 'qentropy_quality_min_entropy_bits',
    help: 'SP 800-90B min-entropy of the newest quality run, bits per byte (original, assessed) or per bit (bitstring)',
    labelNames: ['estimate'] as const,
    registers,
  });
  const lastRun = new Gauge({
    name: 'qentropy_quality_last_run_timestamp_seconds',
    help: 'Completion time of the newest quality run of any outcome, error runs included (Unix seconds)',
    registers,
  });
  const lastTested = new Gauge({
    name: 'qentropy_quality_last_tested_run_timestamp_seconds',
    help: 'Completion time of the newest quality run that tested bits, passed or failed (Unix seconds)',
    registers,
  });
  const verdict = new Gauge({
    name: 'qentropy_quality_last_run_verdict',
    help: "1 for the newest run's verdict, 0 for the others: passed (tests_passed), failed (completed without it), error (nothing tested)",
    labelNames: ['verdict'] as const,
    registers,
  });
  const successRatio = new Gauge({
    name: 'qentropy_quality_last_run_success_ratio',
    help: 'nist_success_rate and uniformity_success_rate of the newest tested run (0 to 1)',
    labelNames: ['criterion'] as const,
    registers,
  });
  const runs = new Counter({
    name: 'qentropy_quality_runs_total',
    help: 'Quality runs stored since this listener started, by outcome (passed, failed, error)',
    labelNames: ['outcome'] as const,
    registers,
  });
  for (const outcome of OUTCOMES) runs.inc({ outcome }, 0);
  if (options.intervalSeconds !== undefined) {
    new Gauge({ name: 'qentropy_quality_interval_seconds', help: 'Seconds between scheduled quality runs', registers }).set(options.intervalSeconds);
  }

  // Runs up to this id were stored before the listener started: the counters start at 0.
  let counted: number | undefined;
  const baseline = store.maxRunId().then(
    (id) => {
      counted ??= id;
    },
    () => undefined, // storage down at start: the first scrape that reaches it sets the baseline
  );

  async function refresh(): Promise<void> {
    await baseline;
    if (counted === undefined) counted = await store.maxRunId();
    else {
      const added = await store.countRunsAfter(counted);
      for (const outcome of OUTCOMES) runs.inc({ outcome }, added[outcome]);
      counted = added.maxId;
    }

    const recent = (await store.listRunRows({ limit: LOOKBACK_RUNS })).reverse(); // newest first
    const newest = recent[0];
    const tested = recent.find((r) => r.record !== null);
    lastRun.reset();
    verdict.reset();
    lastTested.reset();
    successRatio.reset();
    if (newest) {
      lastRun.set(newest.completedMs / 1000);
      for (const v of OUTCOMES) verdict.set({ verdict: v }, outcomeOf(newest) === v ? 1 : 0);
    }
    if (tested?.record) {
      lastTested.set(tested.completedMs / 1000);
      if (tested.record.nist_success_rate !== null) successRatio.set({ criterion: 'nist' }, tested.record.nist_success_rate);
      if (tested.record.uniformity_success_rate !== null) successRatio.set({ criterion: 'uniformity' }, tested.record.uniformity_success_rate);
    }

    minEntropy.reset();
    const latest = (await store.listRuns(LOOKBACK_RUNS)).find((r) => r.minEntropy !== null)?.minEntropy;
    if (latest) {
      minEntropy.set({ estimate: 'original' }, latest.h_original);
      minEntropy.set({ estimate: 'bitstring' }, latest.h_bitstring);
      minEntropy.set({ estimate: 'assessed' }, latest.assessed);
    }
  }

  // One refresh at a time: two scrapes at once must not count the same new runs twice.
  let queue: Promise<void> = Promise.resolve();
  return {
    contentType: registry.contentType,
    async metrics() {
      const done = queue.then(refresh);
      queue = done.catch(() => undefined);
      await done;
      return registry.metrics();
    },
  };
}
