// Shared pieces of the feeder tests: a REAL entropy server (our Fastify app over TLS with
// real accounts on SQLite) whose pool holds exactly the bytes a test put there, so the
// test knows which blocks are good and which must be dropped; it can be stopped and
// started again on the same port to play an upstream outage.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import pino from 'pino';

import { AccountStore } from '../src/accounts/index.js';
import { EntropyPool } from '../src/pool/index.js';
import { accountsFromStore } from '../src/server/account-store.js';
import { buildEntropyApp } from '../src/server/app.js';
import type { FeederSourceOptions } from '../src/feeder/source.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import { devHealth, testTls } from './entropy-harness.js';

/** A random 1,024-byte block with no run of 4 equal bytes (so it passes the RCT for sure). */
export function goodBlock(): Buffer {
  for (;;) {
    const b = crypto.randomBytes(1024);
    let run = 1;
    let ok = true;
    for (let i = 1; i < b.length && ok; i++) {
      run = b[i] === b[i - 1] ? run + 1 : 1;
      if (run >= 4) ok = false;
    }
    if (ok) return b;
  }
}

/** A block the SP 800-90B tests reject: random but with a stuck run of 12 bytes inside. */
export function stuckBlock(): Buffer {
  const b = goodBlock();
  b.fill(0xa5, 300, 312);
  return b;
}

export class Upstream {
  app: FastifyInstance | undefined;
  port = 0;
  readonly pool: EntropyPool;
  private constructor(
    readonly db: Db,
    readonly store: AccountStore,
    readonly caPem: string,
    capacity: number,
  ) {
    this.pool = new EntropyPool({ capacity });
  }

  static async create(capacity = 4 * 1024 * 1024): Promise<Upstream> {
    const db = await openDatabase({ url: 'sqlite::memory:' });
    const store = await AccountStore.open(db);
    const tls = await testTls();
    return new Upstream(db, store, tls.ca.certPem, capacity);
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  async token(name = 'feeder'): Promise<string> {
    const account = (await this.store.getAccount(name)) ?? (await this.store.createAccount({ name, allotmentBytes: null }));
    return (await this.store.createToken(account.id)).token;
  }

  /** Listens (again) on the same port as before, or a free one the first time. */
  async start(): Promise<void> {
    const tls = await testTls();
    const app = await buildEntropyApp({
      pool: this.pool,
      accounts: accountsFromStore(this.store),
      sourceHealth: devHealth,
      tls: { cert: tls.cert, key: tls.key },
      logger: false,
      shortSupplyRetrySeconds: 0,
    });
    await app.listen({ host: '127.0.0.1', port: this.port });
    const address = app.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    this.app = app;
  }

  async stop(): Promise<void> {
    const app = this.app;
    this.app = undefined;
    if (!app) return;
    app.server.closeAllConnections?.();
    await app.close();
  }

  /** Requests the server answered with `status` (from its own /metrics). */
  async requests(status: number): Promise<number> {
    const text = await this.app!.inject({ method: 'GET', url: '/metrics' }).then((r) => r.body);
    let total = 0;
    for (const line of text.split('\n')) {
      const m = /^qentropy_entropy_requests_total\{([^}]*)\} (\d+)/.exec(line);
      if (m && m[1]!.includes('route="/api/v1/quantum-entropy"') && m[1]!.includes(`status="${status}"`)) total += Number(m[2]);
    }
    return total;
  }

  async close(): Promise<void> {
    await this.stop();
    this.pool.clear();
    await this.db.close();
  }
}

/**
 * A source's config entry for `up`: its access token and CA certificate written to files
 * in `dir` (the token 0600), as a feeder config names them.
 */
/** A feeder source on `up` as the pipeline tests configure it: quick retries, no FIPS, H = 7.5. */
export function testSourceOptions(up: Upstream, token: string, extra: Partial<FeederSourceOptions> = {}): FeederSourceOptions {
  return {
    url: up.url,
    token,
    ca: up.caPem,
    blocksPerRequest: 16,
    minEntropyPerByte: 7.5,
    fips140: false,
    failureLimit: 16,
    retryAfterMs: 60_000,
    retry: { baseDelayMs: 20, maxDelayMs: 100 },
    ...extra,
  };
}

export async function sourceEntry(up: Upstream, dir: string, blocksPerRequest: number): Promise<{ url: string; tokenFile: string; caFile: string; blocksPerRequest: number }> {
  const tokenFile = path.join(dir, 'token');
  fs.writeFileSync(tokenFile, `${await up.token()}\n`, { mode: 0o600 });
  const caFile = path.join(dir, 'ca.pem');
  fs.writeFileSync(caFile, up.caPem);
  return { url: up.url, tokenFile, caFile, blocksPerRequest };
}

/** A logger that keeps its lines. */
export function captureLogger(level: pino.Level = 'info'): { logger: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = { write: (s: string) => chunks.push(s) };
  return {
    logger: pino({ level }, stream),
    lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

// Deadlines scale with QENTROPY_TEST_TIME_SCALE (helpers/time.ts).
export { waitFor } from './helpers/time.js';
