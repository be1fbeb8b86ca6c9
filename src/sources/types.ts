// What every entropy source looks like to the pool filler.

/** Health of a source as /healthz and /metrics report it. */
export type SourceState =
  /** Start-up health tests still running: nothing has reached the pool yet. */
  | 'starting'
  | 'ok'
  /** Reads are failing (I/O errors, upstream errors); the filler is retrying. */
  | 'degraded'
  /** Taken out of service: its data kept failing the health tests, or it cannot work here. */
  | 'failed';

export interface SourceHealth {
  name: string;
  state: SourceState;
  /** True for `getrandom`: the OS CSPRNG is for development, not a quantum source. */
  development: boolean;
  /** True when the data passes the SP 800-90B health tests before reaching the pool. */
  healthTested: boolean;
  /** Why the state is not `ok`, in one line. */
  message?: string;
  blocksPassed: number;
  blocksFailed: number;
  /** Blocks that failed, by test (repetition-count, adaptive-proportion, repeated-block, pattern). */
  testFailures: Record<string, number>;
  readErrors: number;
}

export interface EntropySource {
  readonly name: string;
  readonly development: boolean;
  /**
   * Resolves to between 1 and n fresh bytes that the caller now owns. Rejects on an I/O
   * error (the filler retries) or with SourceOutOfServiceError (the filler stops).
   * `next`: how many bytes the caller will ask for right after this read (0 or absent: it
   * will not). A source whose reads pass through tests may start that read now, so the
   * device works while this read's bytes are tested (HealthGatedSource does).
   */
  read(n: number, signal?: AbortSignal, next?: number): Promise<Buffer>;
  /**
   * The read size the filler uses unless configured (`entropy.pool.chunkBytes`); default
   * 64 KiB. Fast sources ask for more: each read is a hop through the thread pool and back
   * through an event loop busy with requests, so small reads cannot keep up with size=512
   * requests (getrandom with 64 KiB reads served ~120 of them a second, the rest 503).
   */
  readonly preferredReadBytes?: number | undefined;
  health(): SourceHealth;
  close(): Promise<void>;
}

/** The source must not be used any more: the filler stops and health says why. */
export class SourceOutOfServiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SourceOutOfServiceError';
  }
}

/**
 * Out of service because its output is not random (a pattern, or health-test failures far
 * above their false-alarm rate): what it delivered earlier must not be served either.
 */
export class SourceNotRandomError extends SourceOutOfServiceError {
  constructor(message: string) {
    super(message);
    this.name = 'SourceNotRandomError';
  }
}

/** A base for sources that do not run health tests themselves. */
export class BasicHealth {
  state: SourceState = 'ok';
  message: string | undefined;
  blocksPassed = 0;
  readErrors = 0;

  constructor(
    readonly name: string,
    readonly development: boolean,
  ) {}

  snapshot(): SourceHealth {
    return {
      name: this.name,
      state: this.state,
      development: this.development,
      healthTested: false,
      ...(this.message !== undefined ? { message: this.message } : {}),
      blocksPassed: this.blocksPassed,
      blocksFailed: 0,
      testFailures: {},
      readErrors: this.readErrors,
    };
  }
}
