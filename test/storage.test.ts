// The storage layer, run identically on SQLite and (when QENTROPY_PG_URL is set) PostgreSQL.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import ts from 'typescript';

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { CommitBatcher } from '../src/storage/batch.js';
import { openDatabase, parseStorageUrl, type Db } from '../src/storage/db.js';
import { translatePlaceholders } from '../src/storage/sql.js';
import { describeEachEngine, SqliteTestEngine } from './helpers/databases.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const MIGRATIONS = [
  'CREATE TABLE items (id {{AUTO_ID}}, name TEXT NOT NULL UNIQUE, size BIGINT NOT NULL, data {{BYTES}})',
  'CREATE TABLE counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL); CREATE INDEX items_size ON items (size)',
];

describeEachEngine('storage', (engine) => {
  let db: Db;
  beforeEach(async () => {
    await engine.reset();
    db = await engine.open();
  });
  afterEach(() => db.close());

  it('reports its engine', () => {
    expect(db.engine).toBe(engine.name);
  });

  it('runs $n placeholders, repeated and out of order, and returns typed values', async () => {
    await db.migrate('t', MIGRATIONS);
    const big = 2 ** 40 + 7;
    const bytes = Buffer.from([0, 1, 2, 255]);
    const inserted = await db.query<{ id: number }>(
      'INSERT INTO items (name, size, data) VALUES ($2, $1, $3) RETURNING id',
      [big, 'a$1', bytes],
    );
    expect(inserted).toHaveLength(1);
    expect(typeof inserted[0]!.id).toBe('number');
    const rows = await db.query<{ name: string; size: number; data: Buffer; twice: number }>(
      "SELECT name, size, data, size + $1 - $1 AS twice FROM items WHERE name = $2 AND name <> '$1'",
      [5, 'a$1'],
    );
    expect(rows).toEqual([{ name: 'a$1', size: big, data: bytes, twice: big }]);
    expect(Buffer.isBuffer(rows[0]!.data)).toBe(true);
    const [count] = await db.query<{ n: number; total: number }>('SELECT COUNT(*) AS n, SUM(size) AS total FROM items');
    expect(count).toEqual({ n: 1, total: big });
  });

  it('execute returns the affected row count; ON CONFLICT DO NOTHING works', async () => {
    await db.migrate('t', MIGRATIONS);
    expect(await db.execute('INSERT INTO counters (name, value) VALUES ($1, $2)', ['a', 1])).toBe(1);
    expect(await db.execute('INSERT INTO counters (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', ['a', 9])).toBe(0);
    await db.execute('INSERT INTO counters (name, value) VALUES ($1, $2)', ['b', 1]);
    expect(await db.execute('UPDATE counters SET value = value + 1')).toBe(2);
    expect(await db.execute('UPDATE counters SET value = 0 WHERE name = $1', ['none'])).toBe(0);
    await db.execute(
      'INSERT INTO counters (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value',
      ['a', 10],
    );
    expect(await db.query('SELECT value FROM counters WHERE name = $1', ['a'])).toEqual([{ value: 12 }]);
  });

  it('binds booleans as 1/0 on both engines', async () => {
    await db.migrate('t', MIGRATIONS);
    await db.execute('INSERT INTO counters (name, value) VALUES ($1, $2), ($3, $4)', ['t', true, 'f', false]);
    expect(await db.query('SELECT name FROM counters WHERE value = $1', [true])).toEqual([{ name: 't' }]);
  });

  it('migrations are recorded, idempotent and applied in order per namespace', async () => {
    await db.migrate('t', MIGRATIONS.slice(0, 1));
    await db.migrate('t', MIGRATIONS);
    await db.migrate('t', MIGRATIONS);
    await db.migrate('other', ['CREATE TABLE other_things (x INTEGER)']);
    const rows = await db.query<{ namespace: string; version: number }>(
      'SELECT namespace, version FROM schema_migrations ORDER BY namespace, version',
    );
    expect(rows.map((r) => `${r.namespace}:${r.version}`)).toEqual(['other:1', 't:1', 't:2']);
    await expect(db.migrate('t', MIGRATIONS.slice(0, 1))).rejects.toThrow(/at version 2, newer than this program \(1\)/);
  });

  it('a failing migration leaves nothing half-applied', async () => {
    await expect(db.migrate('bad', ['CREATE TABLE half_a (x INTEGER); CREATE TABLE half_a (x INTEGER)'])).rejects.toThrow();
    await expect(db.query('SELECT * FROM half_a')).rejects.toThrow();
    await db.migrate('bad', ['CREATE TABLE half_a (x INTEGER)']);
    expect(await db.query('SELECT * FROM half_a')).toEqual([]);
  });

  it('two instances migrating at once apply each migration exactly once', async () => {
    const others = await Promise.all([engine.open(), engine.open(), engine.open()]);
    try {
      await Promise.all([db, ...others].map((d) => d.migrate('t', MIGRATIONS)));
      const rows = await db.query<{ n: number }>("SELECT COUNT(*) AS n FROM schema_migrations WHERE namespace = 't'");
      expect(rows[0]!.n).toBe(2);
    } finally {
      await Promise.all(others.map((d) => d.close()));
    }
  });

  it('transactions commit on success and roll back on error', async () => {
    await db.migrate('t', MIGRATIONS);
    await db.transaction(async (tx) => {
      await tx.execute('INSERT INTO counters (name, value) VALUES ($1, $2)', ['kept', 1]);
    });
    await expect(
      db.transaction(async (tx) => {
        await tx.execute('INSERT INTO counters (name, value) VALUES ($1, $2)', ['lost', 1]);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await db.query('SELECT name FROM counters ORDER BY name')).toEqual([{ name: 'kept' }]);
  });

  it('concurrent read-modify-write transactions lose no update', async () => {
    await db.migrate('t', MIGRATIONS);
    await db.execute('INSERT INTO counters (name, value) VALUES ($1, 0)', ['c']);
    const other = await engine.open();
    try {
      const bump = (d: Db) =>
        d.transaction(
          async (tx) => {
            const [row] = await tx.query<{ value: number }>('SELECT value FROM counters WHERE name = $1', ['c']);
            await new Promise((r) => setTimeout(r, 1)); // invite interleaving
            await tx.execute('UPDATE counters SET value = $1 WHERE name = $2', [row!.value + 1, 'c']);
          },
          { isolation: 'serializable', retries: 200 },
        );
      await Promise.all(Array.from({ length: 40 }, (_, i) => bump(i % 2 ? db : other)));
      expect(await db.query('SELECT value FROM counters')).toEqual([{ value: 40 }]);
    } finally {
      await other.close();
    }
  });

  it('group commit: writes of one turn share a transaction; a failing write fails alone', async () => {
    await db.migrate('t', MIGRATIONS);
    await db.execute('INSERT INTO counters (name, value) VALUES ($1, 0)', ['dup']);
    const batcher = new CommitBatcher(db, (tx, name: string) =>
      tx.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', [name]),
    );
    const names = Array.from({ length: 50 }, (_, i) => `n${i}`);
    const results = await Promise.allSettled([...names, 'dup'].map((n) => batcher.submit(n)));
    expect(results.slice(0, 50).every((r) => r.status === 'fulfilled' && r.value === 1)).toBe(true);
    expect(results[50]!.status).toBe('rejected');
    // Every resolved write is committed and visible to another instance at once.
    const other = await engine.open();
    try {
      expect(await other.query('SELECT COUNT(*) AS n FROM counters WHERE value = 1')).toEqual([{ n: 50 }]);
    } finally {
      await other.close();
    }
  });

  it('group commit: with its transactions in flight at the limit, later writes wait and share the next one', async () => {
    await db.migrate('t', MIGRATIONS);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const batches: number[] = [];
    const batcher = new CommitBatcher(
      db,
      {
        batch: async (tx, names: readonly string[]) => {
          batches.push(names.length);
          if (batches.length === 1) await gate;
          for (const name of names) await tx.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', [name]);
          return names.map(() => true);
        },
      },
      { maxInFlight: 1 },
    );
    const first = batcher.submit('first');
    const later: Array<Promise<boolean>> = [];
    try {
      // The first batch is inside its transaction (PostgreSQL needs a round trip or two).
      for (let i = 0; i < 500 && batches.length === 0; i++) await new Promise((r) => setTimeout(r, 2));
      // Ten more, one per event-loop turn, while the first batch is held open.
      for (let i = 0; i < 10; i++) {
        later.push(batcher.submit(`later${i}`));
        await new Promise((r) => setImmediate(r));
      }
      expect(batches).toEqual([1]);
    } finally {
      open();
    }
    expect(await Promise.all([first, ...later])).toEqual(Array.from({ length: 11 }, () => true));
    expect(batches).toEqual([1, 10]);
    expect(await db.query('SELECT COUNT(*) AS n FROM counters')).toEqual([{ n: 11 }]);
  });

  it('using the Db instead of the handle inside a transaction is an error, not a hang', async () => {
    await db.migrate('t', MIGRATIONS);
    const attempt = db.transaction(async () => {
      await db.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', ['x']);
    });
    if (engine.name === 'sqlite') await expect(attempt).rejects.toThrow(/use its handle/);
    else await attempt; // PostgreSQL: a separate pooled connection, outside the transaction
  });

  it('a statement outside a transaction never lands inside another one', async () => {
    await db.migrate('t', MIGRATIONS);
    const inTx = db.transaction(async (tx) => {
      await tx.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', ['tx']);
      await new Promise((r) => setTimeout(r, 20));
      throw new Error('rollback');
    });
    const outside = db.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', ['outside']);
    await expect(inTx).rejects.toThrow('rollback');
    await outside;
    expect(await db.query('SELECT name FROM counters')).toEqual([{ name: 'outside' }]);
  });
});

describe('storage [sqlite] file', () => {
  const sqlite = new SqliteTestEngine();
  let dir: string;
  beforeEach(async () => {
    await sqlite.setup();
    dir = sqlite.directory;
  });
  afterEach(() => sqlite.teardown());

  it('creates the database file and its WAL 0600, in WAL mode, under a new 0700 directory', async () => {
    const file = path.join(dir, 'state', 'qentropy.db');
    const db = await openDatabase({ url: `sqlite:${file}` });
    try {
      await db.migrate('t', MIGRATIONS);
      await db.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', ['x']);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(fs.statSync(`${file}-wal`).mode & 0o777).toBe(0o600);
      expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
      expect(await db.query('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
      // NORMAL: durable commits are flushed by the WAL syncer instead (tested below).
      expect(await db.query('PRAGMA synchronous')).toEqual([{ synchronous: 1 }]);
      expect(await db.query('PRAGMA foreign_keys')).toEqual([{ foreign_keys: 1 }]);
    } finally {
      await db.close();
    }
  });

  describe('durable commits', () => {
    /**
     * Watches the real fdatasync calls on the WAL (calling through to them): for each, whether
     * `marker` was already in the WAL when the flush was issued, and when it completed.
     */
    function watchFlushes(wal: string, marker: string) {
      const flushes: Array<{ hadMarker: boolean; done: boolean }> = [];
      const real = fs.fdatasync;
      const spy = vi.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
        const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
        if (target !== wal) return real(fd, cb);
        const flush = { hadMarker: fs.readFileSync(wal).includes(marker), done: false };
        flushes.push(flush);
        real(fd, (err) => {
          flush.done = true;
          cb(err);
        });
      }) as typeof fs.fdatasync);
      /** True when a flush issued after the marker reached the WAL has completed. */
      const covered = () => flushes.some((f) => f.hadMarker && f.done);
      return { flushes, covered, restore: () => spy.mockRestore() };
    }

    let db: Db;
    let wal: string;
    beforeEach(async () => {
      const file = path.join(dir, 'durable.db');
      db = await openDatabase({ url: `sqlite:${file}` });
      await db.migrate('t', MIGRATIONS);
      wal = fs.realpathSync(`${file}-wal`);
    });
    afterEach(async () => {
      vi.restoreAllMocks();
      await db.close();
    });

    it('a statement that writes resolves only after the WAL holding it is flushed to disk', async () => {
      const marker = `m-${crypto.randomBytes(8).toString('hex')}`;
      const watch = watchFlushes(wal, marker);
      await db.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', [marker]);
      expect(watch.covered()).toBe(true);
      // A read commits nothing and waits for no flush.
      const before = watch.flushes.length;
      await db.query('SELECT * FROM counters');
      expect(watch.flushes.length).toBe(before);
    });

    it('a transaction resolves only after its commit is flushed; a non-durable one does not wait', async () => {
      const marker = `m-${crypto.randomBytes(8).toString('hex')}`;
      const watch = watchFlushes(wal, marker);
      await db.transaction((tx) => tx.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', [marker]));
      expect(watch.covered()).toBe(true);
      const lazy = `m-${crypto.randomBytes(8).toString('hex')}`;
      const lazyWatch = watchFlushes(wal, lazy);
      await db.transaction((tx) => tx.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', [lazy]), { durable: false });
      expect(lazyWatch.flushes).toHaveLength(0);
    });

    it('concurrent commits each wait for a flush issued after their own write, and share flushes', async () => {
      const markers = Array.from({ length: 40 }, (_, i) => `m${i}-${crypto.randomBytes(6).toString('hex')}`);
      const watches = markers.map((m) => watchFlushes(wal, m));
      const batcher = new CommitBatcher(db, (tx, name: string) => tx.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', [name]));
      await Promise.all(
        markers.map(async (m, i) => {
          // Half as single statements, half through the group-commit batcher, interleaved.
          if (i % 2) await batcher.submit(m);
          else await db.execute('INSERT INTO counters (name, value) VALUES ($1, 1)', [m]);
          expect(watches[i]!.covered()).toBe(true);
        }),
      );
      // Every spy saw the same calls: fewer flushes than the 21 commits (20 statements + 1 batch).
      expect(watches[0]!.flushes.length).toBeLessThan(21);
      expect(await db.query('SELECT COUNT(*) AS n FROM counters')).toEqual([{ n: 40 }]);
    });
  });

  it('tightens an existing database file that others could read', async () => {
    const file = path.join(dir, 'loose.db');
    fs.writeFileSync(file, '', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const db = await openDatabase({ url: file });
    await db.close();
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('keeps data across close and reopen', async () => {
    const file = path.join(dir, 'keep.db');
    const a = await openDatabase({ url: `sqlite://${file}` });
    await a.migrate('t', MIGRATIONS);
    await a.execute('INSERT INTO counters (name, value) VALUES ($1, 42)', ['k']);
    await a.close();
    const b = await openDatabase({ url: `sqlite:${file}` });
    expect(await b.query('SELECT value FROM counters')).toEqual([{ value: 42 }]);
    await b.close();
  });

  it('three processes migrating the same new file at once apply each migration once', async () => {
    const file = path.join(dir, 'race.db');
    const storage = transpileStorage(dir);
    const child = path.join(dir, 'migrate-child.mjs');
    fs.writeFileSync(
      child,
      `import { openDatabase } from ${JSON.stringify(storage)};
       const db = await openDatabase({ url: process.argv[2] });
       await db.migrate('race', ['CREATE TABLE r1 (x INTEGER)', 'CREATE TABLE r2 (x INTEGER)']);
       await db.close();`,
    );
    const codes = await Promise.all([0, 1, 2].map(() => runNode(child, [file])));
    expect(codes).toEqual([0, 0, 0]);
    const db = await openDatabase({ url: file });
    expect(await db.query("SELECT version FROM schema_migrations WHERE namespace = 'race' ORDER BY version")).toEqual([
      { version: 1 },
      { version: 2 },
    ]);
    await db.close();
  });
});

/**
 * Plain Node cannot import our .ts sources, so child processes get a JavaScript copy of
 * src/storage (type-stripped by the TypeScript compiler, nothing else changed) next to a
 * node_modules link. Returns the URL of the copy's db.js.
 */
function transpileStorage(dir: string): string {
  const out = path.join(dir, 'storage-js');
  fs.mkdirSync(out, { recursive: true });
  const src = path.join(repoRoot, 'src', 'storage');
  for (const name of fs.readdirSync(src).filter((n) => n.endsWith('.ts'))) {
    const js = ts.transpileModule(fs.readFileSync(path.join(src, name), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    fs.writeFileSync(path.join(out, name.replace(/\.ts$/, '.js')), js);
  }
  if (!fs.existsSync(path.join(dir, 'node_modules'))) {
    fs.symlinkSync(path.join(repoRoot, 'node_modules'), path.join(dir, 'node_modules'));
  }
  return pathToFileURL(path.join(out, 'db.js')).href;
}

function runNode(script: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) => resolve(code ?? -1));
  });
}

describe('storage URLs and SQL translation', () => {
  it('parses the supported storage URLs', () => {
    expect(parseStorageUrl('sqlite:/var/lib/q.db')).toEqual({ engine: 'sqlite', file: '/var/lib/q.db' });
    expect(parseStorageUrl('sqlite:///var/lib/q.db')).toEqual({ engine: 'sqlite', file: '/var/lib/q.db' });
    expect(parseStorageUrl('/var/lib/q.db')).toEqual({ engine: 'sqlite', file: '/var/lib/q.db' });
    expect(parseStorageUrl('postgres://u@h:5432/d')).toEqual({ engine: 'postgres', url: 'postgres://u@h:5432/d' });
    expect(parseStorageUrl('postgresql://u@h/d').engine).toBe('postgres');
    expect(() => parseStorageUrl('mysql://h/d')).toThrow(/unsupported scheme/);
    expect(() => parseStorageUrl('')).toThrow(/empty/);
  });

  it('leaves $n inside string literals, quoted names and comments alone', () => {
    expect(translatePlaceholders(`SELECT '$1', "$2", $2 -- $3\n, $1 /* $4 */`)).toEqual({
      text: `SELECT '$1', "$2", ? -- $3\n, ? /* $4 */`,
      order: [1, 0],
    });
    expect(translatePlaceholders(`SELECT 'it''s $1', $1`).order).toEqual([0]);
  });

  it('reports a missing parameter instead of binding NULL', async () => {
    const db = await openDatabase({ url: 'sqlite::memory:' });
    await expect(db.query('SELECT $1 AS a, $2 AS b', [1])).rejects.toThrow(/\$2 has no parameter/);
    await db.close();
  });

  it('refuses a PostgreSQL server that is not there with a clear error', async () => {
    await expect(openDatabase({ url: 'postgres://nobody@127.0.0.1:1/none' })).rejects.toThrow(/cannot connect to PostgreSQL/);
  });
});

describe('SQLite erasure (Db.scrub)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), 'qentropy-scrub-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const everyFile = (): Buffer => Buffer.concat(fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f))));

  it('leaves a deleted row in no file of the database: not in the WAL, not in the free space of a page', async () => {
    const db = await openDatabase({ url: `sqlite:${path.join(dir, 'e.db')}` });
    try {
      await db.execute('CREATE TABLE secrets (id INTEGER PRIMARY KEY, value BLOB)');
      const [gone, kept] = [crypto.randomBytes(48), crypto.randomBytes(48)];
      await db.execute('INSERT INTO secrets (id, value) VALUES (1, $1), (2, $2)', [gone, kept]);
      await db.scrub(); // both rows now in the database file itself, in one page
      await db.execute('DELETE FROM secrets WHERE id = 1');
      expect(everyFile().includes(gone)).toBe(true); // the WAL still holds the page as it was
      await db.scrub();
      expect(everyFile().includes(gone)).toBe(false);
      expect(everyFile().includes(kept)).toBe(true);
      expect(fs.statSync(path.join(dir, 'e.db-wal')).size).toBe(0);
      expect((await db.query<{ id: number }>('SELECT id FROM secrets')).map((r) => r.id)).toEqual([2]);
    } finally {
      await db.close();
    }
  });

  it('calls made while a scrub runs share the next one, and every call resolves after a scrub that began after it', async () => {
    const db = await openDatabase({ url: `sqlite:${path.join(dir, 'f.db')}` });
    try {
      await db.execute('CREATE TABLE t (id INTEGER PRIMARY KEY, value BLOB)');
      const marker = crypto.randomBytes(48);
      await db.execute('INSERT INTO t (id, value) VALUES (1, $1)', [marker]);
      const first = db.scrub();
      await db.execute('DELETE FROM t WHERE id = 1'); // committed while the first scrub may run
      await Promise.all([first, db.scrub(), db.scrub()]);
      expect(everyFile().includes(marker)).toBe(false);
    } finally {
      await db.close();
    }
  });
});
