// The client's retry policy (product.md §4): 400/401 are fatal; 403 waits at least a
// minute (or until the period resets, when the server says when); 429, 5xx and network
// errors back off exponentially with full jitter, never sooner than Retry-After; a
// success resets the backoff.
import { EntropyClientError } from './errors.js';

export interface RetryPolicyOptions {
  /** First backoff ceiling (default 500 ms). */
  baseDelayMs?: number;
  /** Largest backoff ceiling (default 60 s). */
  maxDelayMs?: number;
  /** Least wait after a 403 (default 60 s). */
  allotmentWaitMs?: number;
  /** Attempts in a row that may fail before giving up (default Infinity). */
  maxAttempts?: number;
  /** false: a 403 is fatal instead of a long wait (for one-shot tools). Default true. */
  waitOnAllotment?: boolean;
  /** Random source for jitter, in [0, 1) (tests may pin it). */
  random?: () => number;
}

export class RetryPolicy {
  private failures = 0;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly allotmentWaitMs: number;
  readonly maxAttempts: number;
  readonly waitOnAllotment: boolean;
  private readonly random: () => number;

  constructor(options: RetryPolicyOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
    this.allotmentWaitMs = options.allotmentWaitMs ?? 60_000;
    this.maxAttempts = options.maxAttempts ?? Number.POSITIVE_INFINITY;
    this.waitOnAllotment = options.waitOnAllotment ?? true;
    this.random = options.random ?? Math.random;
  }

  /** Call after every success: the next failure starts from the base delay again. */
  succeeded(): void {
    this.failures = 0;
  }

  /** Failures in a row so far. */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /**
   * The wait before the next attempt after `error`, or undefined when the error must be
   * surfaced (fatal, or too many attempts).
   */
  nextDelay(error: unknown): number | undefined {
    this.failures += 1;
    if (this.failures >= this.maxAttempts) return undefined;
    if (!(error instanceof EntropyClientError)) return undefined; // a bug, not a server answer
    switch (error.errorClass) {
      case 'fatal':
        return undefined;
      case 'allotment':
        if (!this.waitOnAllotment) return undefined;
        return Math.max(this.allotmentWaitMs, error.retryAfterMs ?? 0);
      case 'transient': {
        const ceiling = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(this.failures - 1, 30));
        const jittered = Math.floor(this.random() * ceiling);
        return Math.max(jittered, error.retryAfterMs ?? 0);
      }
    }
  }
}

/** Sleeps `ms`, rejecting early when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
