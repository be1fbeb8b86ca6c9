/** A FIFO async mutex: `run` waits its turn, then holds the lock while `fn` runs. */
export class AsyncMutex {
  private tail: Promise<void> = Promise.resolve();
  private users = 0;

  /** True when nobody holds or waits for the lock, so a synchronous step may run at once. */
  get idle(): boolean {
    return this.users === 0;
  }

  async run<T>(fn: () => Promise<T> | T): Promise<T> {
    this.users++;
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      await previous;
      return await fn();
    } finally {
      this.users--;
      release();
    }
  }
}
