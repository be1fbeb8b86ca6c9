// One async database interface over SQLite (embedded default) and PostgreSQL (several
// instances sharing one database). Every role's repository codes against `Db`.
//
// Portable SQL subset (write statements once; both engines run them):
// - Placeholders `$1..$n` (translated to `?` for SQLite; a `$n` may repeat).
// - Types: BIGINT for integers (counts, bytes, times as ms since the epoch: both engines
//   return JS numbers), INTEGER for small ints and 0/1 flags (bind booleans freely; they
//   become 1/0), TEXT for strings, DOUBLE PRECISION for floats, `{{BYTES}}` for binary data
//   (BLOB/BYTEA; Buffers both ways), `{{AUTO_ID}}` for a database-assigned id
//   (migrations only). No BOOLEAN, TIMESTAMP, JSON or arrays columns: store JSON as TEXT.
// - INSERT ... ON CONFLICT (cols) DO NOTHING / DO UPDATE SET x = excluded.x, RETURNING,
//   UPDATE ... WHERE with arithmetic on columns (the atomic "take if enough" pattern),
//   DELETE ... WHERE, LIMIT/OFFSET, COALESCE, MIN/MAX/SUM/COUNT, CASE, subqueries.
// - Not portable: SELECT ... FOR UPDATE (SQLite: drop it, a transaction already holds the
//   write lock), ILIKE, `::` casts, NOW() (pass the time as a parameter: it also makes
//   code testable with an injected clock), upserts without a conflict target.
//
// The drivers (better-sqlite3, pg) are imported when a database is opened, not with this
// module: the config reads storage URLs in every process, a feeder opens no database.
import type { Db } from './types.js';

export type { Db, Engine, Migration, Queryable, Row, SqlParam, TransactionOptions } from './types.js';
export { TYPE_MACROS } from './sql.js';

export interface OpenDatabaseOptions {
  /**
   * `sqlite:/path/file.db`, `sqlite:///path/file.db`, a plain path, `sqlite::memory:`
   * (tests), or `postgres://user@host:port/db` (also `postgresql://`).
   */
  url: string;
  /** PostgreSQL only: schema first on the search_path of every connection. */
  schema?: string;
  /** PostgreSQL only: pool size (default 10). */
  maxConnections?: number;
}

export type ParsedStorageUrl = { engine: 'sqlite'; file: string } | { engine: 'postgres'; url: string };

/** Tells which engine a storage URL names; throws a one-line error for an unusable one. */
export function parseStorageUrl(url: string): ParsedStorageUrl {
  if (url.trim() === '') throw new Error('storage URL is empty');
  if (/^postgres(ql)?:\/\//i.test(url)) return { engine: 'postgres', url };
  if (/^sqlite:/i.test(url)) {
    let file = url.slice('sqlite:'.length);
    if (file.startsWith('//')) file = file.slice(2); // sqlite:///abs/path -> /abs/path
    if (file === '') throw new Error(`storage URL '${url}' names no file`);
    return { engine: 'sqlite', file };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new Error(`storage URL '${url}': unsupported scheme (use sqlite:PATH or postgres://...)`);
  }
  return { engine: 'sqlite', file: url };
}

/** Opens (creating if needed) the database a storage URL names. */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Db> {
  const parsed = parseStorageUrl(options.url);
  if (parsed.engine === 'sqlite') {
    const { SqliteDb } = await import('./sqlite.js');
    return new SqliteDb(parsed.file);
  }
  const { PostgresDb } = await import('./postgres.js');
  const db = new PostgresDb({
    url: parsed.url,
    ...(options.schema !== undefined ? { schema: options.schema } : {}),
    ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
  });
  try {
    await db.query('SELECT 1');
  } catch (err) {
    await db.close();
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`cannot connect to PostgreSQL: ${reason}`);
  }
  return db;
}
