// One server under test, run in its own process by run.js:
//   node server.js ceiling <size>                          a bare node:http handler, precomputed body
//   node server.js service <size> <tokensFile>            the entropy role's app (compiled, dist/),
//                                                          pool filled by getrandom as it drains
//   node server.js service-prefilled <size> <tokensFile>  the same app, its pool filled before
//                                                          the run and the filler stopped (no
//                                                          source cost during the measurement)
//   node server.js service-memory <size> <tokensFile>     accounts in memory (diagnostic)
//   node server.js service-device <size> <tokensFile>     as `service`, but the pool is filled by a
//                                                          `device:` source on a FIFO that a generator
//                                                          process writes random bytes into, through
//                                                          the health gate (issue 30)
// Prints "listening <port>" once ready. Both serve plain HTTP on 127.0.0.1, so the figures
// compare request handling, not TLS.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { startFifoGenerator } from './fifo.js';

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
  // A finite allotment (1 PiB per month): every request takes the durable reservation path
  // an allotted account takes, not a shortcut for unlimited accounts.
  const account = await store.createAccount({ name: `bench-${process.pid}-${Date.now()}`, allotmentBytes: 2 ** 50 });
  // Enough tokens that none exceeds 30 requests per 10 s at the rates measured here:
  // the rate-limit and allotment work of every request is real.
  const tokens = [];
  const wanted = Number(process.env.BENCH_TOKENS ?? 12000);
  while (tokens.length < wanted) {
    const n = Math.min(100, wanted - tokens.length);
    const made = await Promise.all(Array.from({ length: n }, () => store.createToken(account.id)));
    tokens.push(...made.map((t) => t.token));
  }
  fs.writeFileSync(tokensFile, JSON.stringify(tokens), { mode: 0o600 });

  const MiB = 1024 * 1024;
  let generator;
  let source = new GetrandomSource();
  if (mode === 'service-device') {
    const { createSource, parseSourceSpec } = await import(new URL('sources/index.js', dist).href);
    const { createNativeTester } = await import(new URL('sources/native-tester.js', dist).href);
    generator = startFifoGenerator(dir);
    const fifo = generator.fifo;
    source = createSource(parseSourceSpec(`device:${fifo}`), { createTester: () => createNativeTester(7.5) });
  }
  let pool;
  let filler;
  if (mode === 'service-prefilled') {
    // Enough for the warm-up and the run at up to BENCH_PREFILL_RATE (default 2,000) requests/s; run.js
    // reports any 503 (pool ran dry) as non-2xx.
    const seconds = Number(process.env.BENCH_SECONDS ?? 8) + Number(process.env.BENCH_WARMUP_SECONDS ?? 3) + 2;
    const prefill = Math.min(Number(process.env.BENCH_PREFILL_MIB ?? 8192) * MiB, seconds * Number(process.env.BENCH_PREFILL_RATE ?? 2000) * size * 1024);
    pool = new EntropyPool({ capacity: Math.max(prefill, 64 * MiB), lowWater: 0 });
    // Two reads at a time: both cores fill it before the run.
    while (pool.room > 0) {
      const parts = await Promise.all([0, 1].map(() => source.read(Math.min(16 * MiB, pool.room))));
      for (const part of parts) pool.put(part);
    }
  } else if (mode === 'service-device') {
    // As the role runs a device source: the filler's default read size.
    pool = new EntropyPool({ capacity: 128 * MiB, lowWater: 96 * MiB });
    filler = new PoolFiller(pool, source);
    filler.start();
    await pool.waitForLevel(pool.capacity);
  } else {
    pool = new EntropyPool({ capacity: 256 * MiB, lowWater: 192 * MiB });
    filler = new PoolFiller(pool, source, { chunkSize: 4 * MiB });
    filler.start();
    await pool.waitForLevel(pool.capacity);
  }
  // `service-memory`: the same app with accounts held in memory, to separate the cost of
  // the HTTP/pool/encoder path from the database work per request (not a deployable mode).
  // As the entropy role does once it serves the database (SQLite: allotment charged ahead).
  if (mode !== 'service-memory') await store.startServing();
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
    await filler?.stop();
    await source.close();
    generator?.stop();
    await store.stopServing();
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
    async admit(auth, _bytes, now) {
      const w = (windows.get(auth.tokenId) ?? []).filter((t) => t > now - 10_000);
      if (w.length >= 30) return { ok: false, refusal: 'rate-limit', retryAfterMs: w[0] + 10_000 - now };
      w.push(now);
      windows.set(auth.tokenId, w);
      return { ok: true, release: async () => {} };
    },
  };
}
