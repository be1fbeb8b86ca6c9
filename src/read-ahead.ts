// One read started before it is asked for, so a source works (a device delivers, an
// upstream answers) while its caller is busy with the bytes before it: the health gate's
// reads (handed to its tester as they arrive) and the feeder's requests. At most one is
// pending; one that is no longer wanted is called off, and what it brings anyway is erased
// unread.

export class ReadAhead<T> {
  private pending: { read: Promise<T>; abort: AbortController } | undefined;

  /** `erase` wipes what a read brought that nobody took. */
  constructor(private readonly erase: (brought: T) => void) {}

  get started(): boolean {
    return this.pending !== undefined;
  }

  /** Starts `read`; the signal it is given aborts when `parent` does, or when it is dropped. */
  start(read: (signal: AbortSignal) => Promise<T>, parent?: AbortSignal): void {
    const abort = new AbortController();
    const promise = read(parent ? AbortSignal.any([parent, abort.signal]) : abort.signal);
    promise.catch(() => {}); // its error is the taker's, when it takes this read
    this.pending = { read: promise, abort };
  }

  /** The read started, handed over (its bytes or its error are the caller's now), if any. */
  take(): Promise<T> | undefined {
    const pending = this.pending;
    this.pending = undefined;
    return pending?.read;
  }

  /** Calls off the read started; if it brings bytes anyway, they are erased unread. */
  drop(): void {
    const pending = this.pending;
    this.pending = undefined;
    if (!pending) return;
    pending.abort.abort(new Error('read ahead no longer wanted'));
    pending.read.then(this.erase, () => {});
  }
}
