// Group commit for the KME's writes. Every durable change (pending keys, activations,
// deliveries stored at the peer, retrievals, notices) is an operation submitted here; the
// operations queued while earlier commits ran (or within one turn of the event loop)
// share one transaction and hence one fsync. Each operation still gets its own result:
// it runs inside a SAVEPOINT, so a refusal (an EtsiError: unknown key, already retrieved,
// conflicting delivery) rolls back only that operation's statements, and its promise is
// rejected while the others commit. Every promise settles only after the commit, so a
// caller that awaits `run` knows its change is durable (or was not made at all).
//
// Why: better-sqlite3 commits synchronously, so each fsync (several ms on a busy disk)
// stalls the whole event loop; one transaction per request capped the KME at a few
// hundred requests per second. With grouping the commit rate stays ~constant while the
// work per commit grows with the load.
import type { Db, Queryable } from '../storage/db.js';
import { EtsiError } from './errors.js';

export type Operation<R> = (tx: Queryable) => Promise<R>;

interface Queued {
  op: Operation<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface GroupCommitOptions {
  /** At most this many operations per transaction (default 512). */
  maxOps?: number;
  /**
   * Transactions in flight at once (default 2). More than one lets the next group write
   * while the previous one waits for its flush (SQLite with the WAL synced off the event
   * loop, PostgreSQL); the database still orders them, and each operation resolves only
   * after its own transaction has committed.
   */
  maxConcurrent?: number;
}

/** Refusals an operation makes on purpose; anything else is a database failure. */
function isRefusal(err: unknown): boolean {
  return err instanceof EtsiError;
}

export class GroupCommit {
  private queue: Queued[] = [];
  private running = 0;
  private scheduled = false;
  private readonly maxOps: number;
  private readonly maxConcurrent: number;
  /** Statistics for benchmarks and tests: transactions committed and operations in them. */
  readonly stats = { transactions: 0, operations: 0 };

  constructor(
    private readonly db: Db,
    opts: GroupCommitOptions = {},
  ) {
    this.maxOps = opts.maxOps ?? 512;
    this.maxConcurrent = opts.maxConcurrent ?? 2;
  }

  /**
   * Runs `op` in a shared transaction; resolves with its result after the commit. `op`
   * must touch only the database through `tx` (it may run again: PostgreSQL retries a
   * transaction after a serialization failure, and a group that fails for a reason other
   * than a refusal is re-run one operation per transaction).
   */
  run<R>(op: Operation<R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ op, resolve: resolve as (v: unknown) => void, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.running >= this.maxConcurrent || this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    // One turn of the event loop gathers the operations of concurrent requests.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.running >= this.maxConcurrent) return;
    this.running++;
    const batch = this.queue.splice(0, this.maxOps);
    try {
      if (batch.length === 1) {
        await this.runAlone(batch[0]!);
      } else if (batch.length > 1) {
        await this.runGroup(batch);
      }
    } finally {
      this.running--;
      // What arrived while this commit ran goes out at once, as the next group.
      this.schedule();
    }
  }

  private async runAlone(item: Queued): Promise<void> {
    try {
      const value = await this.db.transaction((tx) => item.op(tx));
      this.count(1);
      item.resolve(value);
    } catch (err) {
      item.reject(err);
    }
  }

  private async runGroup(batch: Queued[]): Promise<void> {
    let outcomes: Outcome[];
    try {
      outcomes = await this.db.transaction(async (tx) => {
        const out: Outcome[] = [];
        for (const item of batch) {
          await tx.execute('SAVEPOINT kme_op');
          try {
            const value = await item.op(tx);
            await tx.execute('RELEASE SAVEPOINT kme_op');
            out.push({ ok: true, value });
          } catch (err) {
            // A database failure (lost connection, serialization failure) fails the group;
            // the transaction layer retries or the operations are re-run alone below.
            if (!isRefusal(err)) throw err;
            await tx.execute('ROLLBACK TO SAVEPOINT kme_op');
            await tx.execute('RELEASE SAVEPOINT kme_op');
            out.push({ ok: false, error: err });
          }
        }
        return out;
      });
    } catch {
      // Something other than a refusal broke the shared transaction: give every operation a
      // transaction of its own, so one failing operation does not fail the others.
      await Promise.all(batch.map((item) => this.runAlone(item)));
      return;
    }
    this.count(batch.length);
    batch.forEach((item, i) => {
      const o = outcomes[i]!;
      if (o.ok) item.resolve(o.value);
      else item.reject(o.error);
    });
  }

  private count(ops: number): void {
    this.stats.transactions++;
    this.stats.operations += ops;
  }

  /** Resolves once nothing is queued or committing (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.running > 0 || this.scheduled || this.queue.length > 0) await new Promise((r) => setTimeout(r, 5));
  }
}
