// The engines a storage-backed test suite runs against: a fresh temporary SQLite file
// always, and PostgreSQL when QENTROPY_PG_URL is set (in a schema of its own, dropped
// afterwards, so test files running in parallel never see each other's tables).
//
//   describeEachEngine('my repository', (engine) => {
//     let db: Db;
//     beforeEach(async () => { db = await engine.open(); await db.migrate('mine', MIGRATIONS); });
//     afterEach(() => db.close());
//     it('...', async () => { ... });
//   });
//
// `engine.open()` returns a new, independent handle on the same database each time: on
// PostgreSQL a separate pool ("another instance"); on SQLite a handle sharing the file's
// one connection per process (as two instances in one process would).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';

import { openDatabase, type Db, type Engine } from '../../src/storage/db.js';

export interface TestEngine {
  readonly name: Engine;
  /** Why this engine is skipped here, or undefined when it runs. */
  readonly skipReason: string | undefined;
  /** The storage URL (SQLite: the temp file; PostgreSQL: QENTROPY_PG_URL). */
  readonly url: string;
  /** PostgreSQL: the schema of this run (put first on the search_path). */
  readonly schema: string | undefined;
  /** Storage URL that selects this run's schema too (for child processes such as the CLI). */
  readonly isolatedUrl: string;
  /** Opens a new handle on the test database. */
  open(): Promise<Db>;
  /** Makes the database fresh and empty (a new SQLite file / an empty schema). */
  reset(): Promise<void>;
}

function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
}

export class SqliteTestEngine implements TestEngine {
  readonly name = 'sqlite' as const;
  readonly skipReason = undefined;
  readonly schema = undefined;
  private dir: string | undefined;
  private file = '';

  get url(): string {
    return `sqlite:${this.file}`;
  }
  get isolatedUrl(): string {
    return this.url;
  }
  /** The temporary directory holding the database file. */
  get directory(): string {
    return this.dir!;
  }

  async setup(): Promise<void> {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-db-'));
    await this.reset();
  }
  async reset(): Promise<void> {
    this.file = path.join(this.dir!, `${uniqueName('test')}.db`);
  }
  open(): Promise<Db> {
    return openDatabase({ url: this.url });
  }
  async teardown(): Promise<void> {
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

export class PostgresTestEngine implements TestEngine {
  readonly name = 'postgres' as const;
  readonly skipReason: string | undefined;
  readonly url: string;
  private currentSchema = uniqueName('qe_test');
  private readonly created: string[] = [];

  constructor(url: string | undefined) {
    this.url = url ?? '';
    this.skipReason = url ? undefined : 'QENTROPY_PG_URL not set';
  }

  get schema(): string {
    return this.currentSchema;
  }
  get isolatedUrl(): string {
    const u = new URL(this.url);
    u.searchParams.set('options', `-c search_path=${this.currentSchema}`);
    return u.toString();
  }

  private async admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }

  async setup(): Promise<void> {
    await this.createSchema();
  }
  private async createSchema(): Promise<void> {
    const schema = this.currentSchema;
    await this.admin((c) => c.query(`CREATE SCHEMA ${schema}`));
    this.created.push(schema);
  }
  async reset(): Promise<void> {
    this.currentSchema = uniqueName('qe_test');
    await this.createSchema();
  }
  open(): Promise<Db> {
    return openDatabase({ url: this.url, schema: this.currentSchema });
  }
  async teardown(): Promise<void> {
    if (this.created.length === 0) return;
    await this.admin(async (c) => {
      for (const schema of this.created) await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    });
  }
}

/** The engines to test against, in order: SQLite, then PostgreSQL (maybe skipped). */
export function testEngines(): Array<SqliteTestEngine | PostgresTestEngine> {
  return [new SqliteTestEngine(), new PostgresTestEngine(process.env.QENTROPY_PG_URL)];
}

/**
 * Declares `suite` once per engine, as `title [sqlite]` and `title [postgres]`; the
 * PostgreSQL copy is reported skipped with its reason when QENTROPY_PG_URL is unset.
 * The database is created before the suite and removed after it; call `engine.reset()`
 * in a beforeEach for a fresh database per test.
 */
export function describeEachEngine(title: string, suite: (engine: TestEngine) => void): void {
  for (const engine of testEngines()) {
    const skip = engine.skipReason;
    const name = skip ? `${title} [${engine.name}] (skipped: ${skip})` : `${title} [${engine.name}]`;
    describe.skipIf(skip !== undefined)(name, () => {
      beforeAll(() => engine.setup());
      afterAll(() => engine.teardown());
      suite(engine);
    });
  }
}
