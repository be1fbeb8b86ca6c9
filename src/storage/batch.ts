// Group commit: writes submitted in the same turn of the event loop run in one transaction,
// so they share one commit (one fsync on SQLite) instead of paying one each. Each write
// still runs as its own statement(s) in order and resolves only after the commit, so a
// caller that awaits `submit` knows its write is durable.
//
// Worth it on SQLite, where better-sqlite3 commits synchronously and an fsync blocks the
// event loop for milliseconds, and on PostgreSQL for writes to one hot row (an account's
// usage): each transaction holds the row lock until its commit is flushed, so without
// batching that row sees at most one commit per fsync.
import type { Db, Queryable, TransactionOptions } from './types.js';

interface Pending<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}

export class CommitBatcher<T, R> {
  private queue: Array<Pending<T, R>> = [];
  private scheduled = false;

  constructor(
    private readonly db: Db,
    /**
     * Runs one write inside the shared transaction. It may run more than once (a failed
     * batch is re-run one write per transaction), so it must only touch the database.
     */
    private readonly write: (tx: Queryable, item: T) => Promise<R>,
    private readonly options: TransactionOptions & { maxBatch?: number } = {},
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, this.options.maxBatch ?? 512);
    if (this.queue.length > 0) setImmediate(() => void this.flush());
    else this.scheduled = false;
    if (batch.length === 0) return;
    let values: R[];
    try {
      values = await this.db.transaction(async (tx) => {
        const out: R[] = [];
        for (const p of batch) out.push(await this.write(tx, p.item));
        return out;
      }, this.options);
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      // Something in the batch failed and the whole transaction rolled back: run each
      // write in a transaction of its own, so one bad write does not fail the others.
      await Promise.all(
        batch.map((p) => this.db.transaction((tx) => this.write(tx, p.item), this.options).then(p.resolve, p.reject)),
      );
      return;
    }
    batch.forEach((p, i) => p.resolve(values[i]!));
  }
}
