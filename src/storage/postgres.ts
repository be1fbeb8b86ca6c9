// PostgreSQL backend: a connection pool; transactions on one pooled client with retry on
// serialization failures and deadlocks; migrations under an advisory lock so several
// instances starting together apply each migration once.
import pg from 'pg';

import { expandMacros } from './sql.js';
import type { Db, Migration, Queryable, Row, SqlParam, TransactionOptions } from './types.js';

const INT8_OID = 20;
const NUMERIC_OID = 1700;
/** Key of the advisory lock that serialises migrations (any fixed 64-bit value). */
const MIGRATION_LOCK_KEY = 7_236_458_011;
const RETRYABLE_CODES = new Set(['40001', '40P01']);

function toNumber(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) && Number.isInteger(n)) {
    throw new Error(`integer ${text} from the database is beyond JavaScript's safe range`);
  }
  return n;
}

/** BIGINT and NUMERIC arrive as JS numbers, as SQLite gives them; everything else as pg does. */
const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID || oid === NUMERIC_OID) return toNumber;
    return pg.types.getTypeParser(oid, format as 'text');
  },
} as unknown as pg.CustomTypesConfig;

function toPgParams(params: readonly SqlParam[]): unknown[] {
  return params.map((value) => {
    if (value === undefined) return null;
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (typeof value === 'bigint') return value.toString();
    return value;
  });
}

class PgRunner implements Queryable {
  constructor(private readonly target: pg.Pool | pg.PoolClient) {}

  async query<T = Row>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    const result = await this.target.query(sql, toPgParams(params));
    return result.rows as T[];
  }

  async execute(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    const result = await this.target.query(sql, toPgParams(params));
    return result.rowCount ?? 0;
  }
}

class PgTransaction extends PgRunner {
  active = true;
  constructor(client: pg.PoolClient) {
    super(client);
  }
  override async query<T = Row>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    if (!this.active) throw new Error('transaction handle used after its transaction ended');
    return super.query<T>(sql, params);
  }
  override async execute(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    if (!this.active) throw new Error('transaction handle used after its transaction ended');
    return super.execute(sql, params);
  }
}

function isRetryable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && RETRYABLE_CODES.has(String((err as { code?: unknown }).code));
}

export interface PostgresOptions {
  url: string;
  /** Schema to put first on the search_path of every connection (tests use one per run). */
  schema?: string;
  /** Pool size (default 10). */
  maxConnections?: number;
}

export class PostgresDb implements Db {
  readonly engine = 'postgres' as const;
  private readonly pool: pg.Pool;
  private readonly runner: PgRunner;
  private closed = false;
  private readonly state = new Map<string, unknown>();

  constructor(options: PostgresOptions) {
    const config: pg.PoolConfig = {
      connectionString: options.url,
      max: options.maxConnections ?? 10,
      types: typeParsers,
    };
    if (options.schema !== undefined) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(options.schema)) throw new Error(`invalid schema name '${options.schema}'`);
      config.options = `-c search_path=${options.schema}`;
    }
    this.pool = new pg.Pool(config);
    // An idle client that loses its server (restart, network) must not crash the process;
    // the pool drops it and the next query gets a fresh connection or a clear error.
    this.pool.on('error', () => {});
    this.runner = new PgRunner(this.pool);
  }

  query<T = Row>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return this.runner.query<T>(sql, params);
  }

  connectionState<T>(key: string, create: () => T): T {
    if (!this.state.has(key)) this.state.set(key, create());
    return this.state.get(key) as T;
  }

  /** Other instances write the same database at any time, and asking would cost a round trip. */
  externalChangeMark(): undefined {
    return undefined;
  }

  /**
   * Nothing to do that would hold: PostgreSQL keeps a deleted row's old version in the table
   * until VACUUM (and its bytes after that until the space is reused), and in the WAL until
   * the segment is recycled, or forever in a WAL archive or base backup. docs/storage.md
   * ("Erasure") says what an operator must do instead.
   */
  async scrub(): Promise<void> {}

  execute(sql: string, params: readonly SqlParam[] = []): Promise<number> {
    return this.runner.execute(sql, params);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const retries = options.retries ?? 5;
    const begin = `BEGIN ISOLATION LEVEL ${(options.isolation ?? 'read committed').toUpperCase()}`;
    for (let attempt = 0; ; attempt++) {
      const client = await this.pool.connect();
      const tx = new PgTransaction(client);
      let broken: Error | undefined;
      try {
        await client.query(begin);
        if (options.durable === false) await client.query('SET LOCAL synchronous_commit = off');
        const result = await fn(tx);
        tx.active = false;
        await client.query('COMMIT');
        return result;
      } catch (err) {
        tx.active = false;
        try {
          await client.query('ROLLBACK');
        } catch (rollbackErr) {
          broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
        }
        if (isRetryable(err) && attempt < retries) {
          // Back off a little, randomised, so two conflicting transactions do not collide again.
          await new Promise((r) => setTimeout(r, Math.random() * 10 * (attempt + 1)));
          continue;
        }
        throw err;
      } finally {
        client.release(broken);
      }
    }
  }

  async migrate(namespace: string, migrations: readonly Migration[]): Promise<void> {
    await this.transaction(async (tx) => {
      // Held until COMMIT: a second instance waits here, then sees the recorded versions.
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      await tx.execute(
        'CREATE TABLE IF NOT EXISTS schema_migrations (namespace TEXT NOT NULL, version INTEGER NOT NULL, applied_at BIGINT NOT NULL, PRIMARY KEY (namespace, version))',
      );
      const [row] = await tx.query<{ v: number | null }>(
        'SELECT MAX(version) AS v FROM schema_migrations WHERE namespace = $1',
        [namespace],
      );
      const current = row?.v ?? 0;
      if (current > migrations.length) {
        throw new Error(
          `database schema '${namespace}' is at version ${current}, newer than this program (${migrations.length}); upgrade qentropy`,
        );
      }
      for (let v = current + 1; v <= migrations.length; v++) {
        const m = migrations[v - 1]!;
        // No parameters: the simple protocol, which accepts several statements at once.
        await tx.execute(expandMacros(typeof m === 'function' ? m('postgres') : m, 'postgres'));
        await tx.execute('INSERT INTO schema_migrations (namespace, version, applied_at) VALUES ($1, $2, $3)', [
          namespace,
          v,
          Date.now(),
        ]);
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
