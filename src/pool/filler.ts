// The background filler: reads from the source while the pool has room, sleeps once the
// pool is full, and wakes when the pool asks for a refill (a take left it below the
// low-water mark, or a client's request or a quality draw found it short at any level). Source errors
// back off exponentially; a source taken out of service stops the filler for good (and
// one found not random also empties the pool).
import type { EntropySource } from '../sources/types.js';
import { SourceNotRandomError, SourceOutOfServiceError } from '../sources/types.js';
import type { EntropyPool } from './pool.js';

export interface FillerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface FillerOptions {
  /** Largest single read from the source (default: the source's preferredReadBytes, else 64 KiB). */
  chunkSize?: number;
  /** First retry delay after a read error (default 250 ms), doubled up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  logger?: FillerLogger;
}

const silent: FillerLogger = { info() {}, warn() {}, error() {} };

export class PoolFiller {
  private running = false;
  private stopped: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly abort = new AbortController();
  private readonly chunkSize: number;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;
  private readonly logger: FillerLogger;
  private unsubscribe: (() => void) | undefined;
  /** Set when the source was taken out of service. */
  outOfService: string | undefined;

  constructor(
    private readonly pool: EntropyPool,
    private readonly source: EntropySource,
    options: FillerOptions = {},
  ) {
    this.chunkSize = options.chunkSize ?? source.preferredReadBytes ?? 64 * 1024;
    this.retryMs = options.retryMs ?? 250;
    this.maxRetryMs = options.maxRetryMs ?? 30_000;
    this.logger = options.logger ?? silent;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = this.pool.onRefillNeeded(() => this.wake?.());
    this.stopped = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort(new Error('filler stopped'));
    this.wake?.();
    this.unsubscribe?.();
    await this.stopped;
  }

  private async loop(): Promise<void> {
    let delay = this.retryMs;
    while (this.running) {
      if (this.pool.room === 0) {
        await this.sleepUntilRefill();
        continue;
      }
      try {
        const n = Math.min(this.pool.room, this.chunkSize);
        // With room for more, the source may start the next read while it tests this one.
        const data = await this.source.read(n, this.abort.signal, Math.min(this.pool.room - n, this.chunkSize));
        if (!this.running) {
          data.fill(0);
          break;
        }
        this.pool.put(data);
        delay = this.retryMs;
      } catch (err) {
        if (!this.running) break;
        if (err instanceof SourceOutOfServiceError) {
          this.outOfService = err.message;
          // A source found not random delivered a deterministic stream, maybe for a while
          // before the verdict: nothing of it already in the pool may be served.
          if (err instanceof SourceNotRandomError) this.pool.clear();
          this.logger.error({ source: this.source.name, reason: err.message }, 'entropy source taken out of service');
          this.running = false;
          break;
        }
        const message = err instanceof Error ? err.message : String(err);
        this.logger.warn({ source: this.source.name, err: message, retryInMs: delay }, 'entropy source read failed');
        await this.sleep(delay);
        delay = Math.min(delay * 2, this.maxRetryMs);
      }
    }
  }

  /** Sleeps until the pool asks for a refill and has room (or stop()). */
  private sleepUntilRefill(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        if (!this.running || this.pool.room > 0) {
          this.wake = undefined;
          resolve();
        }
      };
      this.wake();
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        if (!this.running) done();
      };
    });
  }
}
