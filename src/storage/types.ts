// The storage interface every role codes against (docs/storage.md).

export type Engine = 'sqlite' | 'postgres';

/**
 * A value bound to a `$n` placeholder. Use numbers (integers for BIGINT columns; times are
 * milliseconds since the epoch), strings, Buffers, null. Booleans are bound as 1/0 so the
 * same SQL works on SQLite, which has no boolean type; store flags in INTEGER columns.
 */
export type SqlParam = string | number | bigint | boolean | Buffer | Uint8Array | null | undefined;

/** A row as returned by the driver; BIGINT/NUMERIC columns come back as JS numbers on both engines. */
export type Row = Record<string, unknown>;

/** Something SQL can run on: the database itself or an open transaction. */
export interface Queryable {
  /** Runs one statement and returns its rows (empty for statements without RETURNING). */
  query<T = Row>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  /** Runs one statement and returns the number of rows it inserted, updated or deleted. */
  execute(sql: string, params?: readonly SqlParam[]): Promise<number>;
}

export interface TransactionOptions {
  /**
   * PostgreSQL isolation level (SQLite transactions are always serialisable). Default
   * 'read committed'; a conditional UPDATE re-checks its WHERE after waiting for a row lock,
   * which is all most writes need.
   */
  isolation?: 'read committed' | 'repeatable read' | 'serializable';
  /** PostgreSQL: how many times to re-run `fn` after a serialization failure or deadlock. Default 5. */
  retries?: number;
  /**
   * false: this transaction's commit need not survive a power loss (SQLite: WAL without
   * fsync for this commit; PostgreSQL: synchronous_commit off for it). For bookkeeping
   * that may be lost harmlessly, e.g. rate-limit windows. It still commits atomically and
   * is never lost on a process crash. Default true.
   */
  durable?: boolean;
}

/** One migration: SQL (may hold several statements and `{{MACROS}}`), or SQL built per engine. */
export type Migration = string | ((engine: Engine) => string);

export interface Db extends Queryable {
  readonly engine: Engine;
  /**
   * Runs `fn` in one transaction: committed when `fn` resolves, rolled back when it throws.
   * Use only the `tx` handle inside `fn` (the Db itself waits for the transaction on SQLite).
   * On PostgreSQL `fn` may run more than once (retry on 40001/40P01), so keep side effects
   * outside the database out of it.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Applies `migrations[k]` as version k+1 of `namespace` unless already applied, in one
   * transaction, recorded in `schema_migrations`. Safe when several processes start at once.
   * Never edit a released migration; append a new one.
   */
  migrate(namespace: string, migrations: readonly Migration[]): Promise<void>;
  /**
   * State a caller keeps in this process for this database, made by `create` the first time
   * `key` is asked for. SQLite: one per file per process, shared by every handle on the file
   * here (they share its one connection) and dropped when the last one closes. PostgreSQL:
   * this handle's own (each handle is a separate instance with its own pool).
   */
  connectionState<T>(key: string, create: () => T): T;
  /**
   * A cheap mark that changes whenever another process has committed to the database
   * (SQLite: `PRAGMA data_version`), so what this process read can be kept until it does.
   * Writes through this process's own connection do not change it. undefined where the
   * engine has no cheap way to tell (PostgreSQL): keep nothing across requests there.
   */
  externalChangeMark(): number | undefined;
  /**
   * Call after deleting or overwriting secrets: resolves once no copy of what was deleted
   * is left in the database's own files. SQLite: deleted rows are zeroed in their pages
   * (secure_delete), and this checkpoints and truncates the WAL, which still held the older
   * page images (docs/storage.md, "Erasure"); concurrent calls share one scrub. PostgreSQL
   * cannot promise this (dead tuples until VACUUM, WAL segments, base backups): a no-op,
   * and the docs say what an operator must do instead.
   */
  scrub(): Promise<void>;
  /** Closes this handle (the last handle on a SQLite file closes the file). */
  close(): Promise<void>;
}
