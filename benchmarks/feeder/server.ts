// A local entropy service for the feeder benchmark: our Fastify app on 127.0.0.1 (plain
// HTTP: loopback), real accounts on SQLite in memory, a pool kept full from getrandom by
// the entropy role's own filler (reads on the thread pool, as the role runs a source).
// Prints one JSON line {url, token} and serves until killed.
//
// Until 2026-11-27 it refilled its pool with crypto.randomBytes on its event loop, up to
// 64 MiB at once when the pool ran low: ~60 ms in which no response left, so the feeder's
// pulls stalled on the benchmark's own upstream.
import { AccountStore } from '../../src/accounts/index.js';
import { EntropyPool, PoolFiller } from '../../src/pool/index.js';
import { accountsFromStore } from '../../src/server/account-store.js';
import { buildEntropyApp } from '../../src/server/app.js';
import { GetrandomSource } from '../../src/sources/getrandom.js';
import { openDatabase } from '../../src/storage/db.js';

const MiB = 1024 * 1024;
const pool = new EntropyPool({ capacity: 256 * MiB, lowWater: 192 * MiB });
const filler = new PoolFiller(pool, new GetrandomSource(), { chunkSize: 4 * MiB });
filler.start();
await pool.waitForLevel(pool.capacity);
const db = await openDatabase({ url: 'sqlite::memory:' });
const store = await AccountStore.open(db, { rateLimit: { requests: 1_000_000, windowMs: 10_000 } });
const account = await store.createAccount({ name: 'bench', allotmentBytes: null });
const { token } = await store.createToken(account.id);
const app = await buildEntropyApp({
  pool,
  accounts: accountsFromStore(store),
  sourceHealth: () => ({ name: 'getrandom', state: 'ok', development: true, healthTested: false, blocksPassed: 0, blocksFailed: 0, testFailures: {}, readErrors: 0 }),
  logger: false,
  logRequests: false,
});
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, token })}\n`);
