// What every sink does: take bytes that passed the health tests and hand them on. The
// feeder runs each sink on its own timer, so one that fails or hangs never stops the others.

export type SinkKind = 'kernel' | 'pkcs11' | 'file';

export interface FeedOutcome {
  /** Bytes the sink accepted (0 when it skipped). */
  bytes: number;
  /** Bits of entropy credited (kernel sink). */
  creditedBits?: number;
}

/** A sink's refusal. `permanent`: retrying cannot help until the config or host changes. */
export class SinkError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly permanent = false,
  ) {
    super(message);
    this.name = 'SinkError';
  }
}

export interface Sink {
  /** Unique name for logs and metrics: `kernel`, `pkcs11:LABEL`, `file:PATH`. */
  readonly name: string;
  readonly kind: SinkKind;
  /** Milliseconds between feeds; 0 feeds whenever the buffer has bytes (file sinks). */
  readonly intervalMs: number;
  /** Opens devices, sessions or files. Throws SinkError; the feeder retries later. */
  open(): Promise<void>;
  /** Bytes the next feed wants (0: nothing to do right now, e.g. every slot refused seeds). */
  wants(): number;
  /**
   * Hands `bytes` on. The feeder zeroes them afterwards. Throws SinkError.
   * `maxCreditBitsPerByte`: what the bytes are worth at most (the combining mode's credit);
   * a crediting sink credits no more than that.
   */
  feed(bytes: Buffer, maxCreditBitsPerByte?: number): Promise<FeedOutcome>;
  /** Calls `wake` when the sink wants a feed before its timer (kernel pool wakeup). */
  watch?(wake: () => void): () => void;
  /** Sink-specific state for `feeder status` (e.g. PKCS#11 slots). */
  details?(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}
