// What one Db.scrub() costs on this disk (issue 26 item 2): a sealed-key-sized row deleted
// from a SQLite file, then the scrub (WAL flush, checkpoint, database flush, truncate, WAL
// flush); reports its wall time and the longest event-loop gap seen meanwhile, next to the
// same gap during an idle wait of the same length (what the machine's load alone gives),
// and how long SQLite's own TRUNCATE checkpoint, which flushes inside the call, holds the
// event loop for the same work.
//   node benchmarks/kme/scrub.js        (BENCH_SCRUBS, default 200; builds on dist/)
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { dist } from './dist.js';

const { openDatabase } = await import(dist('src/storage/db.js'));
const n = Number(process.env.BENCH_SCRUBS ?? 200);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-bench-scrub-'));

/** Runs `work` while a 0 ms interval measures how late the event loop gets to it; the longest gap, ms. */
async function longestGap(work) {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 0);
  const t0 = performance.now();
  await work();
  const took = performance.now() - t0;
  clearInterval(timer);
  return { took, worst };
}

const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const db = await openDatabase({ url: `sqlite:${path.join(dir, 'scrub.db')}` });
try {
  await db.execute('CREATE TABLE t (id INTEGER PRIMARY KEY, value BLOB)');
  for (let i = 0; i < n + 100; i++) await db.execute('INSERT INTO t (value) VALUES ($1)', [Buffer.alloc(60, 1)]);
  const scrub = { took: [], gap: [] };
  const idle = { gap: [] };
  for (let i = 0; i < n; i++) {
    await db.execute('DELETE FROM t WHERE id = (SELECT MIN(id) FROM t)');
    const s = await longestGap(() => db.scrub());
    scrub.took.push(s.took);
    scrub.gap.push(s.worst);
    const wait = await longestGap(() => new Promise((r) => setTimeout(r, s.took)));
    idle.gap.push(wait.worst);
  }
  const f = (x) => x.toFixed(2);
  console.log(`Db.scrub() after deleting one row, ${n} times (load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}):`);
  console.log(`  wall ms               p50 ${f(q(scrub.took, 0.5))}  p90 ${f(q(scrub.took, 0.9))}  max ${f(q(scrub.took, 1))}`);
  console.log(`  event-loop gap ms     p50 ${f(q(scrub.gap, 0.5))}  p90 ${f(q(scrub.gap, 0.9))}  max ${f(q(scrub.gap, 1))}`);
  console.log(`  idle wait's gap ms    p50 ${f(q(idle.gap, 0.5))}  p90 ${f(q(idle.gap, 0.9))}  max ${f(q(idle.gap, 1))}`);

  // The same with SQLite's own checkpoint: one synchronous call, flushes included.
  const Database = createRequire(import.meta.url)('better-sqlite3');
  const raw = new Database(path.join(dir, 'raw.db'));
  raw.pragma('journal_mode = WAL');
  raw.exec('PRAGMA synchronous = NORMAL');
  raw.exec('PRAGMA secure_delete = ON');
  raw.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, value BLOB)');
  const insert = raw.prepare('INSERT INTO t (value) VALUES (?)');
  for (let i = 0; i < n + 100; i++) insert.run(Buffer.alloc(60, 1));
  const remove = raw.prepare('DELETE FROM t WHERE id = (SELECT MIN(id) FROM t)');
  const checkpoint = raw.prepare('PRAGMA wal_checkpoint(TRUNCATE)');
  const blocked = [];
  for (let i = 0; i < n; i++) {
    remove.run();
    const t0 = performance.now();
    checkpoint.get();
    blocked.push(performance.now() - t0);
  }
  console.log(`  SQLite's wal_checkpoint(TRUNCATE), event loop held ms  p50 ${f(q(blocked, 0.5))}  p90 ${f(q(blocked, 0.9))}  max ${f(q(blocked, 1))}`);
  // (raw is not closed: better-sqlite3 objects are never let go, see src/storage/sqlite.ts.)
} finally {
  await db.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
