// The quality service: the scheduled runs and the background pruning, over one store.
// The HTTP side lives in ./api.ts; the daemon role (src/roles/quality.ts) wires both.
import type { Logger } from 'pino';

import { QualityRunner, RunAbortedError, type RunOutcome, type RunnerOptions } from './run.js';
import { Scheduler } from './scheduler.js';
import type { QualityStore } from './store.js';

const DAY_MS = 86_400_000;

export interface QualityServiceOptions extends RunnerOptions {
  intervalMs?: number;
  firstDelayMs?: number;
  /** Records older than this are pruned (default 90 days). */
  retentionMs?: number;
  /** How often pruning runs (default 1 h; also once at start). */
  pruneIntervalMs?: number;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

export class QualityService {
  readonly runner: QualityRunner;
  private readonly scheduler: Scheduler<RunOutcome>;
  private pruneTimer: NodeJS.Timeout | undefined;
  private pruning: Promise<unknown> | undefined;
  private readonly now: () => number;

  constructor(private readonly options: QualityServiceOptions) {
    this.runner = new QualityRunner(options);
    this.now = options.now ?? Date.now;
    const log = options.logger;
    this.scheduler = new Scheduler((signal) => this.runLogged(signal), {
      intervalMs: options.intervalMs ?? 600_000,
      firstDelayMs: options.firstDelayMs ?? 0,
      onSkippedTick: () => log?.warn({}, 'quality run still going at the next tick: tick skipped'),
      onError: (err) => log?.error({ err: (err as Error).message }, 'quality run could not be stored'),
    });
  }

  get store(): QualityStore {
    return this.options.store;
  }

  get skippedTicks(): number {
    return this.scheduler.skippedTicks;
  }

  /** When the next scheduled run is due (ms since the epoch), or undefined while stopped. */
  get nextRunAt(): number | undefined {
    return this.scheduler.nextTickAt;
  }

  start(): void {
    this.scheduler.start();
    const every = this.options.pruneIntervalMs ?? 3_600_000;
    this.pruneTimer = setInterval(() => void this.prune(), every);
    this.pruneTimer.unref();
    void this.prune();
  }

  async stop(): Promise<void> {
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.pruneTimer = undefined;
    await this.scheduler.stop();
    await this.pruning;
  }

  /** Runs now (or joins the run in flight). */
  runNow(): Promise<RunOutcome> {
    return this.scheduler.runNow();
  }

  /** Deletes expired records and expired passing-run bits; never throws. */
  prune(): Promise<unknown> {
    if (this.pruning) return this.pruning;
    const now = this.now();
    const retention = this.options.retentionMs ?? 90 * DAY_MS;
    this.pruning = this.options.store
      .prune(now - retention, now)
      .then((removed) => {
        if (removed.runs > 0 || removed.data > 0) this.options.logger?.info(removed, 'pruned old quality records');
      })
      .catch((err: Error) => this.options.logger?.warn({ err: err.message }, 'pruning quality records failed; will retry'))
      .finally(() => {
        this.pruning = undefined;
      });
    return this.pruning;
  }

  private async runLogged(signal: AbortSignal): Promise<RunOutcome> {
    const log = this.options.logger;
    try {
      const outcome = await this.runner.run(signal);
      if (outcome.status === 'error') log?.error({ run: outcome.id, error: outcome.error }, 'quality run failed for a non-statistical reason');
      else if (outcome.strictlyFailing) log?.error({ run: outcome.id, ...outcome.record }, 'quality run failed both criteria');
      else if (outcome.looselyFailing) log?.warn({ run: outcome.id, ...outcome.record }, 'quality run failed one criterion');
      else log?.info({ run: outcome.id, ...outcome.record }, 'quality run passed');
      if (outcome.status === 'completed' && outcome.repetitionFlagged) {
        log?.error({ run: outcome.id }, 'quality run found identical or periodic sequences in the batch');
      }
      return outcome;
    } catch (err) {
      if (err instanceof RunAbortedError) log?.info({}, 'quality run stopped by shutdown; nothing stored');
      throw err;
    }
  }
}
