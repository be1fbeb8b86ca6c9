// SQLite backend: one better-sqlite3 connection per file per process, shared by every
// handle opened on that file. better-sqlite3 is synchronous, so a transaction that awaits
// between statements must keep every other statement of this process out until it ends:
// all work on a file goes through one async mutex (statements outside a transaction take
// a fast path when nothing is queued).
import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import path from 'node:path';

import { createRequire } from 'node:module';

import type Database from 'better-sqlite3';

/**
 * better-sqlite3 is loaded on the first SQLite open, not at import: its addon is built for
 * one Node ABI, and a process that only uses PostgreSQL (e.g. a KME site under another Node
 * line, in the cross-runtime tests) must not need it.
 */
let sqliteModule: typeof Database | undefined;
function sqliteConstructor(): typeof Database {
  sqliteModule ??= createRequire(import.meta.url)('better-sqlite3') as typeof Database;
  return sqliteModule;
}

import { AsyncMutex } from './mutex.js';
import { expandMacros, translatePlaceholders } from './sql.js';
import type { Db, Migration, Queryable, Row, SqlParam, TransactionOptions } from './types.js';
import { WalScrubber } from './wal-scrub.js';
import { WalSyncer } from './wal-sync.js';

export { NotDurableError } from './wal-sync.js';

/** How long a statement waits for another process's write lock before failing (ms). */
const BUSY_TIMEOUT_MS = 5000;

interface SharedConnection {
  sqlite: Database.Database;
  /** Prepared statements by SQL text: preparing costs more than running a small statement. */
  statements: Map<string, Database.Statement>;
  mutex: AsyncMutex;
  handles: number;
  key: string;
  /**
   * Flushes the WAL for durable commits off the event loop (wal-sync.ts); undefined when
   * the database is not in WAL mode (in memory), where commits sync inline if at all.
   */
  wal: WalSyncer | undefined;
  /** Db.connectionState: what callers keep for this file in this process. */
  state: Map<string, unknown>;
  /** PRAGMA data_version, prepared once, and its value for the current event-loop turn. */
  dataVersion: { statement: Database.Statement; value: number | undefined } | undefined;
  /** Db.scrub() of this file (undefined in memory, where nothing reaches a disk). */
  scrubber: WalScrubber | undefined;
}

const openFiles = new Map<string, SharedConnection>();
/**
 * The connection whose transaction the current async context is inside, if any: catches
 * code that calls the Db instead of `tx` inside a transaction (which would wait for itself
 * forever). Only with QENTROPY_CHECK_TRANSACTIONS=1 (the test suite sets it): an
 * AsyncLocalStorage makes Node track every promise of the process, which cost the entropy
 * service ~5 % of its throughput.
 */
const insideTransaction =
  process.env.QENTROPY_CHECK_TRANSACTIONS === '1'
    ? new AsyncLocalStorage<{ shared: SharedConnection; tx: SqliteTransaction }>()
    : undefined;

function toSqliteParam(value: SqlParam): unknown {
  if (value === undefined) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  return value;
}

function bindParams(order: number[], params: readonly SqlParam[]): unknown[] {
  return order.map((index) => {
    if (index >= params.length) throw new Error(`SQL placeholder $${index + 1} has no parameter`);
    return toSqliteParam(params[index]);
  });
}

/**
 * Creates the database file 0600 (and its directory 0700) before SQLite opens it, so it is
 * never readable by others even for a moment; tightens an existing file that is too open.
 * SQLite gives the -wal and -shm files the main file's mode.
 */
function prepareFile(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
  try {
    const st = fs.fstatSync(fd);
    if ((st.mode & 0o077) !== 0) fs.fchmodSync(fd, st.mode & 0o700);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Puts the connection in WAL mode and returns the journal mode now in force. Several
 * processes opening one new file at once can get SQLITE_BUSY here without SQLite's busy
 * handler having waited (CI saw it once: three processes migrating a new file, one failed
 * with "database is locked" in this pragma), so it is retried for up to the busy timeout.
 */
// Node 24.19 and later abort the process (nodejs/node#65446) when V8 collects a
// better-sqlite3 12 Statement or Database at a moment without a current Node environment,
// which any garbage collection may be. So no such object is ever let go while the process
// runs: statements live in the connection's cache, setting pragmas uses exec() (no
// Statement), and the few others, and closed connections, are kept here. better-sqlite3 13
// fixes this but needs Node 22 (docs/install.md).
const retained: unknown[] = [];
function retain<T>(value: T): T {
  retained.push(value);
  return value;
}

function switchToWal(sqlite: Database.Database): string {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      return String(retain(sqlite.prepare('PRAGMA journal_mode = WAL').pluck()).get());
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err;
      // Opening is synchronous (better-sqlite3), so wait synchronously, briefly.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

function openShared(file: string): SharedConnection {
  const inMemory = file === ':memory:';
  const key = inMemory ? `:memory:${Math.random()}` : path.resolve(file);
  const existing = openFiles.get(key);
  if (existing) {
    existing.handles++;
    return existing;
  }
  if (!inMemory) prepareFile(key);
  const sqlite = new (sqliteConstructor())(inMemory ? ':memory:' : key, { timeout: BUSY_TIMEOUT_MS });
  let wal: WalSyncer | undefined;
  try {
    const mode = switchToWal(sqlite);
    // Served allotment, stored keys and test records must survive a power loss once the
    // response has left, so every durable commit is flushed to disk before it resolves.
    // With WAL, NORMAL syncs only at checkpoints, so on its own it could lose the last
    // commits; we run NORMAL and flush the WAL ourselves after each durable commit, from
    // the thread pool (wal-sync.ts): the same guarantee as FULL, without stalling the
    // event loop for the flush. Outside WAL mode, FULL.
    if (mode === 'wal') {
      sqlite.exec('PRAGMA synchronous = NORMAL');
      wal = new WalSyncer(`${key}-wal`);
    } else {
      sqlite.exec('PRAGMA synchronous = FULL');
    }
    sqlite.exec('PRAGMA foreign_keys = ON');
    sqlite.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // A deleted or rewritten row is overwritten with zeros in its page (and a freed page is
    // zeroed), not merely unlinked: the sealed copies of retrieved keys and erased ratchet
    // secrets must not linger in the file's free space (docs/storage.md, "Erasure").
    sqlite.exec('PRAGMA secure_delete = ON');
  } catch (err) {
    sqlite.close();
    throw err;
  }
  const shared: SharedConnection = {
    sqlite,
    statements: new Map(),
    mutex: new AsyncMutex(),
    handles: 1,
    key,
    wal,
    state: new Map(),
    dataVersion: undefined,
    scrubber: undefined,
  };
  if (wal) shared.scrubber = new WalScrubber(() => checkpointAndTruncate(shared, wal));
  openFiles.set(key, shared);
  return shared;
}

/** How long a scrub keeps trying while another process reads the file, and how often. */
const SCRUB_DEADLINE_MS = BUSY_TIMEOUT_MS;
const SCRUB_RETRY_MS = 20;

/**
 * Copies every WAL frame into the database and truncates the WAL to zero bytes, durably:
 * afterwards the only copy of each page is its newest one, in the database file, where
 * secure_delete has zeroed what was deleted (docs/storage.md, "Erasure").
 *
 * SQLite's own TRUNCATE checkpoint would flush the database inside the call, on the event
 * loop (9 ms at the median, 50 ms at worst under load: benchmarks/kme/scrub.js). So the
 * flushes are ours, from the thread pool, in the order that keeps every commit safe,
 * holding the connection throughout so no frame is added meanwhile:
 *   1. flush the WAL (every frame about to be copied is on disk);
 *   2. PASSIVE checkpoint with synchronous=OFF: the frames are copied into the database
 *      file, nothing flushed, the WAL untouched (a crash now replays it);
 *   3. flush the database file;
 *   4. TRUNCATE checkpoint: nothing is left to copy, so SQLite neither copies nor flushes;
 *      it resets the WAL and truncates it to zero bytes;
 *   5. flush the WAL again, so its new length survives a power loss (before that, the old
 *      frames could come back with the old length).
 * Steps 2 and 4 need every reader of another process to be on the newest snapshot; rather
 * than let SQLite's busy handler sleep on the event loop, they run with no busy wait, and
 * the whole scrub is tried again a little later, for up to the busy timeout.
 */
async function checkpointAndTruncate(shared: SharedConnection, wal: WalSyncer): Promise<void> {
  const deadline = Date.now() + SCRUB_DEADLINE_MS;
  while (!(await shared.mutex.run(() => scrubOnce(shared, wal)))) {
    if (Date.now() >= deadline) {
      throw new Error(`cannot scrub ${shared.key}: another process kept reading an older snapshot for ${SCRUB_DEADLINE_MS} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, SCRUB_RETRY_MS));
  }
}

/** Steps 1-5 above, holding the connection; false when another process's reader was in the way. */
async function scrubOnce(shared: SharedConnection, wal: WalSyncer): Promise<boolean> {
  const sqlite = shared.sqlite;
  const checkpoint = (mode: 'PASSIVE' | 'TRUNCATE'): boolean => {
    try {
      const result = cachedStatement(shared, `PRAGMA wal_checkpoint(${mode})`).get() as { busy: number; log: number; checkpointed: number };
      return result.busy === 0 && result.checkpointed === result.log;
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'SQLITE_BUSY') throw err;
      return false;
    }
  };
  await wal.sync();
  sqlite.exec('PRAGMA busy_timeout = 0');
  try {
    sqlite.exec('PRAGMA synchronous = OFF');
    let copied: boolean;
    try {
      copied = checkpoint('PASSIVE');
    } finally {
      sqlite.exec('PRAGMA synchronous = NORMAL');
    }
    if (!copied) return false;
    await flushFile(shared.key);
    if (!checkpoint('TRUNCATE')) return false;
  } finally {
    sqlite.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  }
  await wal.sync();
  return true;
}

/** fdatasync of a file from the thread pool. */
async function flushFile(file: string): Promise<void> {
  const handle = await fs.promises.open(file, fs.constants.O_RDONLY);
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Statement runner bound to the connection; used both outside and inside transactions. */
const STATEMENT_CACHE_LIMIT = 500;

function cachedStatement(shared: SharedConnection, text: string): Database.Statement {
  let stmt = shared.statements.get(text);
  if (!stmt) {
    stmt = shared.sqlite.prepare(text);
    if (shared.statements.size >= STATEMENT_CACHE_LIMIT) {
      retain([...shared.statements.values()]);
      shared.statements.clear();
    }
    shared.statements.set(text, stmt);
  }
  return stmt;
}

class SqliteRunner implements Queryable {
  constructor(protected readonly shared: SharedConnection) {}

  protected prepare(text: string): Database.Statement {
    return cachedStatement(this.shared, text);
  }

  /** Whether the last statement run could have written (outside a transaction: it committed). */
  wrote = false;

  runQuery<T>(sql: string, params: readonly SqlParam[]): T[] {
    const { text, order } = translatePlaceholders(sql);
    const stmt = this.prepare(text);
    const bound = bindParams(order, params);
    this.wrote = !stmt.readonly;
    if (stmt.reader) return stmt.all(...bound) as T[];
    stmt.run(...bound);
    return [];
  }

  runExecute(sql: string, params: readonly SqlParam[]): number {
    const { text, order } = translatePlaceholders(sql);
    const stmt = this.prepare(text);
    const bound = bindParams(order, params);
    this.wrote = !stmt.readonly;
    if (stmt.reader) return stmt.all(...bound).length;
    return stmt.run(...bound).changes;
  }

  async query<T = Row>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return this.runQuery<T>(sql, params);
  }

  async execute(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    return this.runExecute(sql, params);
  }
}

class SqliteTransaction extends SqliteRunner {
  active = true;

  override async query<T = Row>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    this.check();
    return this.runQuery<T>(sql, params);
  }

  override async execute(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    this.check();
    return this.runExecute(sql, params);
  }

  private check(): void {
    if (!this.active) throw new Error('transaction handle used after its transaction ended');
  }
}

export class SqliteDb implements Db {
  readonly engine = 'sqlite' as const;
  private readonly shared: SharedConnection;
  private readonly runner: SqliteRunner;
  private closed = false;

  constructor(file: string) {
    this.shared = openShared(file);
    this.runner = new SqliteRunner(this.shared);
  }

  /** The database file's path (undefined for an in-memory database). */
  get file(): string | undefined {
    return this.shared.key.startsWith(':memory:') ? undefined : this.shared.key;
  }

  private ensureOpen(): void {
    if (this.closed) throw new Error('database handle is closed');
    // The Db waits for the open transaction, which waits for this call: a deadlock. Say so.
    const current = insideTransaction?.getStore();
    if (current?.shared === this.shared && current.tx.active) {
      throw new Error('inside a transaction, use its handle (tx), not the Db');
    }
  }

  async query<T = Row>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return this.autocommit(() => this.runner.runQuery<T>(sql, params));
  }

  async execute(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    return this.autocommit(() => this.runner.runExecute(sql, params));
  }

  /** One statement in its own (implicit) transaction; a write is durable when this resolves. */
  private async autocommit<R>(run: () => R): Promise<R> {
    this.ensureOpen();
    let flushed: Promise<void> | undefined;
    const step = (): R => {
      this.shared.wal?.assertHealthy();
      const result = run();
      // Asked for while the connection is still ours, so close() waits for this flush.
      if (this.runner.wrote && this.shared.wal) flushed = this.shared.wal.sync();
      return result;
    };
    const result = this.shared.mutex.idle ? step() : await this.shared.mutex.run(step);
    if (flushed) await flushed;
    return result;
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    this.ensureOpen();
    const durable = options.durable ?? true;
    const wal = this.shared.wal;
    let flushed: Promise<void> | undefined;
    const result = await this.shared.mutex.run(async () => {
      const sqlite = this.shared.sqlite;
      // Not durable: this commit goes to the WAL without a flush; the next durable commit
      // (or checkpoint) flushes it along. Atomicity and crash safety are unchanged.
      // (Only outside WAL mode is the connection on FULL and needs switching.)
      const switchSync = !durable && !wal;
      if (durable) wal?.assertHealthy();
      if (switchSync) sqlite.exec('PRAGMA synchronous = NORMAL');
      // IMMEDIATE takes the write lock now, so two processes cannot both read and then
      // deadlock upgrading to write; the busy timeout makes the second one wait.
      sqlite.exec('BEGIN IMMEDIATE');
      const tx = new SqliteTransaction(this.shared);
      try {
        const result = await (insideTransaction ? insideTransaction.run({ shared: this.shared, tx }, () => fn(tx)) : fn(tx));
        tx.active = false;
        sqlite.exec('COMMIT');
        // Asked for while the connection is still ours, so close() waits for this flush.
        if (durable && wal) flushed = wal.sync();
        return result;
      } catch (err) {
        tx.active = false;
        if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
        throw err;
      } finally {
        if (switchSync) sqlite.exec('PRAGMA synchronous = FULL');
      }
    });
    // Durable: flushed before the caller hears of the commit. The lock is already released,
    // so other transactions run (and queue for the next flush) while this one is flushed.
    if (flushed) await flushed;
    return result;
  }

  /**
   * Removes from the file's WAL what deleted and overwritten rows left there
   * (checkpointAndTruncate); calls made while one runs share the next. Resolves once done;
   * rejects when another process kept reading for longer than the busy timeout (the
   * deletions stand; the next scrub takes the frames along).
   */
  async scrub(): Promise<void> {
    this.ensureOpen();
    await this.shared.scrubber?.request();
  }

  connectionState<T>(key: string, create: () => T): T {
    if (!this.shared.state.has(key)) this.shared.state.set(key, create());
    return this.shared.state.get(key) as T;
  }

  /**
   * PRAGMA data_version, read at most once per turn of the event loop: in WAL mode each read
   * takes and drops a read lock (file-lock system calls), which cost ~10 % of a size=1
   * request when every request asked. A commit by another process is therefore seen from
   * the next turn on, a fraction of a millisecond later under load.
   */
  externalChangeMark(): number {
    this.ensureOpen();
    const version = (this.shared.dataVersion ??= {
      statement: this.shared.sqlite.prepare('PRAGMA data_version').pluck(),
      value: undefined,
    });
    if (version.value === undefined) {
      version.value = version.statement.get() as number;
      setImmediate(() => (version.value = undefined));
    }
    return version.value;
  }

  async migrate(namespace: string, migrations: readonly Migration[]): Promise<void> {
    await this.transaction(async () => {
      const sqlite = this.shared.sqlite;
      sqlite.exec(
        'CREATE TABLE IF NOT EXISTS schema_migrations (namespace TEXT NOT NULL, version INTEGER NOT NULL, applied_at BIGINT NOT NULL, PRIMARY KEY (namespace, version))',
      );
      const row = cachedStatement(this.shared, 'SELECT MAX(version) AS v FROM schema_migrations WHERE namespace = ?').get(namespace) as { v: number | null };
      const current = row.v ?? 0;
      if (current > migrations.length) {
        throw new Error(
          `database schema '${namespace}' is at version ${current}, newer than this program (${migrations.length}); upgrade qentropy`,
        );
      }
      const record = cachedStatement(this.shared, 'INSERT INTO schema_migrations (namespace, version, applied_at) VALUES (?, ?, ?)');
      for (let v = current + 1; v <= migrations.length; v++) {
        const m = migrations[v - 1]!;
        sqlite.exec(expandMacros(typeof m === 'function' ? m('sqlite') : m, 'sqlite'));
        record.run(namespace, v, Date.now());
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Let a running transaction of another handle on this file finish first.
    await this.shared.mutex.run(async () => {
      this.shared.handles--;
      if (this.shared.handles === 0) {
        openFiles.delete(this.shared.key);
        // Commits already asked for their flush; let those finish before SQLite removes the WAL.
        await this.shared.wal?.close();
        this.shared.sqlite.close();
        retain([this.shared.sqlite, ...this.shared.statements.values(), this.shared.dataVersion?.statement]);
      }
    });
  }
}
