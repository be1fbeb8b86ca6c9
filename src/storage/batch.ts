// Group commit: writes submitted in the same turn of the event loop run in one transaction,
// so they share one commit (one flush on SQLite) instead of paying one each. Each write
// still runs as its own statement(s) and resolves only after the commit is durable, so a
// caller that awaits `submit` knows its write will survive a power loss.
//
// Worth it on SQLite, where the transaction lock is held per commit and the WAL flush is
// shared by the batch, and on PostgreSQL for writes to one hot row (an account's usage):
// each transaction holds the row lock until its commit is flushed, so without batching
// that row sees at most one commit per fsync.
import type { Db, Queryable, TransactionOptions } from './types.js';
import { NotDurableError } from './wal-sync.js';

interface Pending<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Runs a whole batch inside the shared transaction and returns one result per item, in
 * the items' order. It may order its statements as it likes (for example to take row locks
 * in a fixed order, so two instances' batches cannot deadlock); it may run more than once,
 * so it must only touch the database.
 */
export type BatchWriter<T, R> = (tx: Queryable, items: readonly T[]) => Promise<R[]>;

export class CommitBatcher<T, R> {
  private queue: Array<Pending<T, R>> = [];
  private scheduled = false;
  private readonly writeAll: BatchWriter<T, R>;

  /**
   * `write` runs one item inside the shared transaction (items in submission order), or
   * pass `{ batch: writer }` to handle the whole batch at once. Either may run more than
   * once (a failed batch is re-run one item per transaction), so it must only touch the
   * database.
   */
  constructor(
    private readonly db: Db,
    write: ((tx: Queryable, item: T) => Promise<R>) | { batch: BatchWriter<T, R> },
    private readonly options: TransactionOptions & { maxBatch?: number } = {},
  ) {
    this.writeAll =
      typeof write === 'function'
        ? async (tx, items) => {
            const out: R[] = [];
            for (const item of items) out.push(await write(tx, item));
            return out;
          }
        : write.batch;
  }

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
      values = await this.db.transaction((tx) => this.writeAll(tx, batch.map((p) => p.item)), this.options);
    } catch (err) {
      // A batch that committed but could not be flushed is not re-run: its writes are in.
      if (batch.length === 1 || err instanceof NotDurableError) {
        batch.forEach((p) => p.reject(err));
        return;
      }
      // Something in the batch failed and the whole transaction rolled back: run each
      // write in a transaction of its own, so one bad write does not fail the others.
      await Promise.all(
        batch.map((p) =>
          this.db
            .transaction(async (tx) => (await this.writeAll(tx, [p.item]))[0]!, this.options)
            .then(p.resolve, p.reject),
        ),
      );
      return;
    }
    batch.forEach((p, i) => p.resolve(values[i]!));
  }
}
