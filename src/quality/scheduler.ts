// Runs a task every `intervalMs` (fixed rate: tick k at start + firstDelay + k x interval,
// so the cadence does not drift by the run time), at most one at a time. A tick that comes
// while a run is still going is skipped, not queued: a run is never started twice.
// `runNow` joins the run in flight or starts one.

export interface SchedulerOptions {
  intervalMs: number;
  /** Delay before the first tick (default 0). */
  firstDelayMs?: number;
  /** A tick found the previous run still going. */
  onSkippedTick?: () => void;
  /** The task rejected (other than by the scheduler's own abort). */
  onError?: (err: unknown) => void;
}

export class Scheduler<T> {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<T> | undefined;
  private controller: AbortController | undefined;
  private nextAt = 0;
  private stopped = true;
  /** Ticks skipped because a run was still going. */
  skippedTicks = 0;

  constructor(
    private readonly task: (signal: AbortSignal) => Promise<T>,
    private readonly options: SchedulerOptions,
  ) {
    if (!(options.intervalMs > 0)) throw new RangeError('intervalMs must be positive');
  }

  get running(): boolean {
    return this.current !== undefined;
  }

  /** When the next tick is due (ms since the epoch), or undefined while stopped. */
  get nextTickAt(): number | undefined {
    return this.stopped ? undefined : this.nextAt;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.nextAt = Date.now() + (this.options.firstDelayMs ?? 0);
    this.arm();
  }

  /** Stops ticking, aborts the run in flight and waits for it to settle. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.controller?.abort(new Error('the quality scheduler stopped'));
    await this.current?.catch(() => undefined);
  }

  /** The run in flight, or a new one (also when the scheduler is not started). */
  runNow(): Promise<T> {
    if (this.current) return this.current;
    const controller = new AbortController();
    this.controller = controller;
    const run = (async () => {
      try {
        return await this.task(controller.signal);
      } finally {
        this.current = undefined;
        this.controller = undefined;
      }
    })();
    this.current = run;
    return run;
  }

  private arm(): void {
    if (this.stopped) return;
    const delay = Math.max(0, this.nextAt - Date.now());
    this.timer = setTimeout(() => this.tick(), delay);
  }

  private tick(): void {
    this.timer = undefined;
    if (this.stopped) return;
    // The next tick on the fixed grid, skipping any grid points already past (e.g. after
    // a suspended machine wakes up) so missed ticks do not fire in a burst.
    const now = Date.now();
    do this.nextAt += this.options.intervalMs;
    while (this.nextAt <= now);
    if (this.current) {
      this.skippedTicks += 1;
      this.options.onSkippedTick?.();
    } else {
      this.runNow().catch((err: unknown) => {
        if (!this.stopped) this.options.onError?.(err);
      });
    }
    this.arm();
  }
}
