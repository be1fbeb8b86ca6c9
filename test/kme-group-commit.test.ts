// The KME's group commit on real databases (a SQLite file; PostgreSQL when QENTROPY_PG_URL
// is set): operations submitted together share one transaction, yet each keeps its own
// outcome — a refused operation leaves nothing behind, the others commit, and every promise
// settles only once its change is committed (visible to another handle on the database).
import { afterEach, beforeEach, expect, it } from 'vitest';

import { badRequest } from '../src/kme/errors.js';
import { GroupCommit } from '../src/kme/group-commit.js';
import type { Db, Queryable } from '../src/storage/db.js';
import { describeEachEngine } from './helpers/databases.js';

const MIGRATIONS = ['CREATE TABLE gc_items (id TEXT PRIMARY KEY, n INTEGER NOT NULL)'];

describeEachEngine('kme group commit', (engine) => {
  let db: Db;
  let other: Db;

  beforeEach(async () => {
    await engine.reset();
    db = await engine.open();
    other = await engine.open();
    await db.migrate('kme_gc_test', MIGRATIONS);
  });
  afterEach(async () => {
    await db.close();
    await other.close();
  });

  const insert = (id: string, n = 1) => (tx: Queryable) => tx.execute('INSERT INTO gc_items (id, n) VALUES ($1, $2)', [id, n]);
  const ids = async (): Promise<string[]> =>
    (await other.query<{ id: string }>('SELECT id FROM gc_items ORDER BY id')).map((r) => r.id);

  it('operations submitted together share one transaction; a refused one is rolled back alone', async () => {
    const writes = new GroupCommit(db);
    const results = await Promise.allSettled([
      writes.run(insert('a')),
      // Writes, then refuses: its insert must not survive, the others must.
      writes.run(async (tx) => {
        await insert('refused')(tx);
        throw badRequest('refused on purpose');
      }),
      writes.run(insert('b')),
      writes.run(async (tx) => (await tx.query<{ n: number }>('SELECT COUNT(*) AS n FROM gc_items'))[0]!.n),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('refused on purpose');
    // The fourth operation ran after the first three in the same transaction: it saw a and b only.
    expect(Number((results[3] as PromiseFulfilledResult<number>).value)).toBe(2);
    expect(await ids()).toEqual(['a', 'b']);
    expect(writes.stats).toEqual({ transactions: 1, operations: 4 });
  });

  it('a later operation sees what an earlier one of the same group wrote (exactly-once claims)', async () => {
    await db.execute("INSERT INTO gc_items (id, n) VALUES ('key', 1)");
    const writes = new GroupCommit(db);
    // Two requests claim the same row at once: the conditional delete succeeds for one only.
    const claim = () =>
      writes.run(async (tx) => {
        const changed = await tx.execute("DELETE FROM gc_items WHERE id = 'key'");
        if (changed !== 1) throw badRequest('already claimed');
        return 'mine';
      });
    const results = await Promise.allSettled([claim(), claim(), claim()]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.message)).toEqual([
      'already claimed',
      'already claimed',
    ]);
    expect(await ids()).toEqual([]);
  });

  it('a database failure in one operation does not fail the others (they are re-run alone)', async () => {
    const writes = new GroupCommit(db);
    const results = await Promise.allSettled([
      writes.run(insert('x')),
      writes.run((tx) => tx.execute('INSERT INTO no_such_table (id) VALUES ($1)', ['y'])),
      writes.run(insert('z')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await ids()).toEqual(['x', 'z']);
  });

  it('resolves only after the commit: the change is visible to another handle at once', async () => {
    const writes = new GroupCommit(db);
    const seen = await Promise.all(
      ['p', 'q', 'r'].map((id) => writes.run(insert(id)).then(async () => (await ids()).includes(id))),
    );
    expect(seen).toEqual([true, true, true]);
  });

  it('operations arriving while a commit runs form the next group', async () => {
    const writes = new GroupCommit(db);
    const first = writes.run(insert('g1'));
    // Queued after the first group has been scheduled: they go out together afterwards.
    await new Promise((r) => setImmediate(r));
    const later = [writes.run(insert('g2')), writes.run(insert('g3')), writes.run(insert('g4'))];
    await Promise.all([first, ...later]);
    expect(await ids()).toEqual(['g1', 'g2', 'g3', 'g4']);
    expect(writes.stats.operations).toBe(4);
    expect(writes.stats.transactions).toBe(2);
    await writes.idle();
  });
});
