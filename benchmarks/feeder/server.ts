// A local entropy service for the feeder benchmark: our Fastify app on 127.0.0.1 (plain
// HTTP: loopback), real accounts on SQLite in memory, a pool kept full from getrandom.
// Prints one JSON line {url, token} and serves until killed.
import crypto from 'node:crypto';

import { AccountStore } from '../../src/accounts/index.js';
import { EntropyPool } from '../../src/pool/index.js';
import { accountsFromStore } from '../../src/server/account-store.js';
import { buildEntropyApp } from '../../src/server/app.js';
import { openDatabase } from '../../src/storage/db.js';

const pool = new EntropyPool({ capacity: 64 * 1024 * 1024 });
const refill = (): void => {
  while (pool.room >= 1024 * 1024) pool.put(crypto.randomBytes(1024 * 1024));
};
refill();
pool.onRefillNeeded(() => setImmediate(refill));
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
