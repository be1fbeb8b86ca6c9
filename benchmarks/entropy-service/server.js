// One server under test, run in its own process by run.js:
//   node server.js service <size> <tokensFile>   the entropy role's app (compiled, dist/)
//   node server.js ceiling <size>                 a bare node:http handler, precomputed body
// Prints "listening <port>" once ready. Both serve plain HTTP on 127.0.0.1, so the figures
// compare request handling, not TLS.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const [mode, sizeText, tokensFile] = process.argv.slice(2);
const size = Number(sizeText);
// The compiled sources (npm run build:ts); QENTROPY_DIST points elsewhere for a private build.
const dist = process.env.QENTROPY_DIST
  ? new URL(`file://${path.resolve(process.env.QENTROPY_DIST)}/`)
  : new URL('../../dist/src/', import.meta.url);

async function sampleBody() {
  const { encodeEntropyResponse } = await import(new URL('native/codec.js', dist).href);
  return encodeEntropyResponse(crypto.randomBytes(size * 1024));
}

if (mode === 'ceiling') {
  // The fastest this runtime answers with a body of the same length: no auth, no pool,
  // no encoding per request.
  const body = await sampleBody();
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
} else {
  const { openDatabase } = await import(new URL('storage/db.js', dist).href);
  const { AccountStore } = await import(new URL('accounts/index.js', dist).href);
  const { EntropyPool, PoolFiller } = await import(new URL('pool/index.js', dist).href);
  const { GetrandomSource } = await import(new URL('sources/getrandom.js', dist).href);
  const { accountsFromStore } = await import(new URL('server/account-store.js', dist).href);
  const { buildEntropyApp } = await import(new URL('server/app.js', dist).href);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-bench-'));
  // SQLite in a temp dir by default; BENCH_STORAGE_URL=postgres://... measures PostgreSQL.
  const db = await openDatabase({ url: process.env.BENCH_STORAGE_URL ?? `sqlite:${path.join(dir, 'bench.db')}` });
  const store = await AccountStore.open(db);
  const account = await store.createAccount({ name: `bench-${process.pid}-${Date.now()}`, allotmentBytes: null });
  // Enough tokens that none exceeds 30 requests per 10 s at the rates measured here:
  // the rate-limit and allotment work of every request is real.
  const tokens = [];
  for (let i = 0; i < Number(process.env.BENCH_TOKENS ?? 4000); i++) tokens.push((await store.createToken(account.id)).token);
  fs.writeFileSync(tokensFile, JSON.stringify(tokens), { mode: 0o600 });

  const source = new GetrandomSource();
  const pool = new EntropyPool({ capacity: 256 * 1024 * 1024, lowWater: 192 * 1024 * 1024 });
  const filler = new PoolFiller(pool, source, { chunkSize: 4 * 1024 * 1024 });
  filler.start();
  await pool.waitForLevel(pool.capacity);
  // `service-memory`: the same app with accounts held in memory, to separate the cost of
  // the HTTP/pool/encoder path from the database work per request (not a deployable mode).
  const accounts = mode === 'service-memory' ? memoryAccounts(tokens) : accountsFromStore(store);
  const app = await buildEntropyApp({
    pool,
    accounts,
    sourceHealth: () => source.health(),
    logger: { level: 'warn' },
    logRequests: false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  console.log(`listening ${app.server.address().port}`);
  process.on('SIGTERM', async () => {
    await app.close();
    await filler.stop();
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
}

function memoryAccounts(tokens) {
  const known = new Map(tokens.map((t, i) => [t, String(i)]));
  const windows = new Map();
  return {
    async authenticate(token) {
      const id = known.get(token);
      return id === undefined ? { ok: false, reason: 'unknown' } : { ok: true, tokenId: id, accountId: '1' };
    },
    async rateLimit(tokenId, now) {
      const w = (windows.get(tokenId) ?? []).filter((t) => t > now - 10_000);
      if (w.length >= 30) return { allowed: false, retryAfterMs: w[0] + 10_000 - now };
      w.push(now);
      windows.set(tokenId, w);
      return { allowed: true, retryAfterMs: 0 };
    },
    async reserve() {
      return { ok: true, release: async () => {} };
    },
  };
}
