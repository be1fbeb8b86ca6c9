// Notices new runs in the store, whoever wrote them (this daemon's scheduler, another
// daemon on the same PostgreSQL, or `qentropy quality run`), by polling the highest run id:
// one cheap query per interval for the whole process, and only while someone listens.
import type { QualityStore } from '../quality/store.js';
import { timelineRun, type TimelineRun } from './view-model.js';

export type RunListener = (run: TimelineRun) => void;

export interface RunWatchOptions {
  /** How often the store is asked for new runs (default 2 s). */
  intervalMs?: number;
  onError?: (err: unknown) => void;
}

export class RunWatch {
  private readonly listeners = new Set<RunListener>();
  private timer: NodeJS.Timeout | undefined;
  private lastId: number | undefined;
  private polling = false;

  constructor(
    private readonly store: QualityStore,
    private readonly options: RunWatchOptions = {},
  ) {}

  /**
   * Calls `listener` with each run stored from now on; returns the unsubscribe function.
   * `sinceId`, the newest run the subscriber already has, starts an idle watch from there, so
   * a run stored before the watch's first look is not taken for old.
   */
  subscribe(listener: RunListener, sinceId?: number): () => void {
    this.listeners.add(listener);
    if (!this.timer) {
      this.lastId = sinceId;
      void this.poll();
      this.timer = setInterval(() => void this.poll(), this.options.intervalMs ?? 2000);
      this.timer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const max = await this.store.maxRunId();
      if (this.lastId === undefined) {
        this.lastId = max;
        return;
      }
      if (max <= this.lastId) return;
      const rows = await this.store.listRunRows({ afterId: this.lastId, limit: 100 });
      this.lastId = max;
      for (const row of rows) for (const listener of this.listeners) listener(timelineRun(row));
    } catch (err) {
      this.options.onError?.(err);
    } finally {
      this.polling = false;
    }
  }
}
