// Group commit: writes submitted in the same turn of the event loop (or while earlier
// commits run) go into one transaction, so they share one commit (one flush on SQLite)
// instead of paying one each. Each write still runs as its own statement(s) and resolves
// only after the commit is durable, so a caller that awaits `submit` knows its write will
// survive a power loss. The project's one group-commit implementation: the accounts' hot
// rows and the KME's writes (src/kme/group-commit.ts) both use it.
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
 * A batch writer's result for an item it refused on purpose (having rolled back that item's
 * statements, e.g. to a savepoint): the item's promise is rejected with `error` once the
 * rest of the batch has committed.
 */
export class Refused {
  constructor(readonly error: unknown) {}
}

/**
 * Runs a whole batch inside the shared transaction and returns one result (or `Refused`) per
 * item, in the items' order. It may order its statements as it likes (for example to take row locks
 * in a fixed order, so two instances' batches cannot deadlock); it may run more than once,
 * so it must only touch the database.
 */
export type BatchWriter<T, R> = (tx: Queryable, items: readonly T[]) => Promise<Array<R | Refused>>;

export interface BatchOptions {
  /** Most items in one transaction (default 512). */
  maxBatch?: number;
  /**
   * Batch transactions in flight at once; items submitted while the limit is reached wait
   * and go together into the next transaction. PostgreSQL default 2: without a limit a
   * steady stream of submissions became one small transaction each, all queueing for the
   * same hot row lock (an account's usage), and batching stopped happening (the entropy
   * benchmark: 489 -> 1,450-2,800 req/s); two let one batch be written while the previous
   * one commits. SQLite default unlimited: its transactions already run one at a time on
   * the connection and then only wait for the shared WAL flush, which a limit would delay
   * (measured: 5.1-5.8k -> 1.1-3.4k req/s with a limit of 2).
   */
  maxInFlight?: number;
}

export class CommitBatcher<T, R> {
  private queue: Array<Pending<T, R>> = [];
  private scheduled = false;
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly writeAll: BatchWriter<T, R>;
  /** For benchmarks and tests: transactions committed, and the items they carried. */
  readonly stats = { transactions: 0, items: 0 };

  /**
   * `write` runs one item inside the shared transaction (items in submission order), or
   * pass `{ batch: writer }` to handle the whole batch at once. Either may run more than
   * once (a failed batch is re-run one item per transaction), so it must only touch the
   * database.
   */
  constructor(
    private readonly db: Db,
    write: ((tx: Queryable, item: T) => Promise<R>) | { batch: BatchWriter<T, R> },
    private readonly options: TransactionOptions & BatchOptions = {},
  ) {
    this.maxInFlight = options.maxInFlight ?? (db.engine === 'postgres' ? 2 : Infinity);
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
      this.schedule();
    });
  }

  /** Starts a batch at the end of this event-loop turn, if one may start. */
  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.inFlight++;
      void this.flush().finally(() => {
        this.inFlight--;
        this.schedule();
      });
      this.schedule();
    });
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, this.options.maxBatch ?? 512);
    if (batch.length === 0) return;
    let values: Array<R | Refused>;
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
          this.db.transaction(async (tx) => (await this.writeAll(tx, [p.item]))[0]!, this.options).then((value) => {
            this.count(1);
            settle(p, value);
          }, p.reject),
        ),
      );
      return;
    }
    this.count(batch.length);
    batch.forEach((p, i) => settle(p, values[i]!));
  }

  private count(items: number): void {
    this.stats.transactions++;
    this.stats.items += items;
  }

  /** Resolves once nothing is queued or committing (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.inFlight > 0 || this.scheduled || this.queue.length > 0) await new Promise((r) => setTimeout(r, 5));
  }
}

function settle<T, R>(p: Pending<T, R>, value: R | Refused): void {
  if (value instanceof Refused) p.reject(value.error);
  else p.resolve(value);
}
