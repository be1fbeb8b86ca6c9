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
// work per commit grows with the load. The batching itself is storage/batch.ts's; this
// file adds only the savepoints and what counts as a refusal.
import { CommitBatcher, Refused } from '../storage/batch.js';
import type { Db, Queryable } from '../storage/db.js';
import { EtsiError } from './errors.js';

export type Operation<R> = (tx: Queryable) => Promise<R>;

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

// Each operation in a savepoint of its own, so a refusal undoes only its statements. A
// database failure (lost connection, serialization failure) fails the whole group: the
// transaction layer retries, or the batcher re-runs the operations one per transaction.
// An operation alone needs no savepoint: its refusal simply rolls the transaction back.
async function runEach(tx: Queryable, ops: ReadonlyArray<Operation<unknown>>): Promise<unknown[]> {
  if (ops.length === 1) return [await ops[0]!(tx)];
  const out: unknown[] = [];
  for (const op of ops) {
    await tx.execute('SAVEPOINT kme_op');
    try {
      out.push(await op(tx));
      await tx.execute('RELEASE SAVEPOINT kme_op');
    } catch (err) {
      if (!isRefusal(err)) throw err;
      await tx.execute('ROLLBACK TO SAVEPOINT kme_op');
      await tx.execute('RELEASE SAVEPOINT kme_op');
      out.push(new Refused(err));
    }
  }
  return out;
}

export class GroupCommit {
  private readonly batcher: CommitBatcher<Operation<unknown>, unknown>;

  constructor(db: Db, opts: GroupCommitOptions = {}) {
    this.batcher = new CommitBatcher(db, { batch: runEach }, { maxBatch: opts.maxOps ?? 512, maxInFlight: opts.maxConcurrent ?? 2 });
  }

  /**
   * Runs `op` in a shared transaction; resolves with its result after the commit. `op`
   * must touch only the database through `tx` (it may run again: PostgreSQL retries a
   * transaction after a serialization failure, and a group that fails for a reason other
   * than a refusal is re-run one operation per transaction).
   */
  run<R>(op: Operation<R>): Promise<R> {
    return this.batcher.submit(op) as Promise<R>;
  }

  /** Transactions committed and the operations in them (benchmarks and tests). */
  get stats(): { transactions: number; operations: number } {
    return { transactions: this.batcher.stats.transactions, operations: this.batcher.stats.items };
  }

  /** Resolves once nothing is queued or committing (shutdown, tests). */
  idle(): Promise<void> {
    return this.batcher.idle();
  }
}
