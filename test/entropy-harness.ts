// A real entropy server for tests: the Fastify app on 127.0.0.1 with real TLS (a CA and a
// server certificate made in memory), real accounts on a real database, and a real pool.
// Requests go through undici with the test CA, exactly as a client over the network would.
import type { FastifyInstance } from 'fastify';
import { Agent, request } from 'undici';

import { AccountStore } from '../src/accounts/index.js';
import { EntropyPool } from '../src/pool/index.js';
import { accountsFromStore } from '../src/server/account-store.js';
import { buildEntropyApp } from '../src/server/app.js';
import type { SourceHealth } from '../src/sources/types.js';
import type { Db } from '../src/storage/db.js';
import { createTestCa, type TestCa } from './helpers/tls.js';

export { writePemFiles } from './helpers/tls.js';

let sharedCa: Promise<{ ca: TestCa; cert: string; key: string }> | undefined;

/** One CA and 127.0.0.1 certificate per test file (making keys is the slow part). */
export function testTls(): Promise<{ ca: TestCa; cert: string; key: string }> {
  sharedCa ??= (async () => {
    const ca = await createTestCa();
    const server = await ca.issueServer();
    return { ca, cert: server.certPem, key: server.keyPem };
  })();
  return sharedCa;
}

export class FakeClock {
  constructor(public now: number) {}
  read = (): number => this.now;
}

export interface TestServer {
  url: string;
  app: FastifyInstance;
  pool: EntropyPool;
  store: AccountStore;
  caPem: string;
  agent: Agent;
  close(): Promise<void>;
}

export const devHealth = (): SourceHealth => ({
  name: 'test-fill',
  state: 'ok',
  development: true,
  healthTested: false,
  blocksPassed: 0,
  blocksFailed: 0,
  testFailures: {},
  readErrors: 0,
});

export interface StartOptions {
  db: Db;
  poolCapacity?: number;
  /** Bytes of random data put in the pool before the server starts (default: capacity). */
  prefill?: number;
  clock?: FakeClock;
  pool?: EntropyPool;
  sourceHealth?: () => SourceHealth;
  /** The service's tls.groups (default: the runtime's). */
  tlsGroups?: string;
}

export async function startTestServer(options: StartOptions): Promise<TestServer> {
  const tls = await testTls();
  const capacity = options.poolCapacity ?? 4 * 1024 * 1024;
  const pool = options.pool ?? new EntropyPool({ capacity });
  const prefill = options.prefill ?? capacity;
  if (prefill > 0) pool.put((await import('node:crypto')).randomBytes(prefill));
  const store = await AccountStore.open(options.db, options.clock ? { clock: options.clock.read } : {});
  // As the entropy role does once it serves the database.
  await store.startServing();
  const app = await buildEntropyApp({
    pool,
    accounts: accountsFromStore(store),
    sourceHealth: options.sourceHealth ?? devHealth,
    tls: { cert: tls.cert, key: tls.key, ...(options.tlsGroups ? { groups: options.tlsGroups } : {}) },
    logger: false,
    ...(options.clock ? { now: options.clock.read } : {}),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const agent = new Agent({ connect: { ca: tls.ca.certPem }, connections: 64 });
  return {
    url: `https://127.0.0.1:${port}`,
    app,
    pool,
    store,
    caPem: tls.ca.certPem,
    agent,
    async close() {
      await agent.close();
      await app.close();
      await store.stopServing();
    },
  };
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  json(): any;
}

/** A request to the test server; never throws for an HTTP status. */
export async function call(
  server: TestServer,
  path: string,
  options: { method?: string; token?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const res = await request(`${server.url}${path}`, {
    method: (options.method ?? 'GET') as 'GET',
    headers,
    dispatcher: server.agent,
    ...(options.body !== undefined ? { body: options.body } : {}),
  });
  const body = Buffer.from(await res.body.arrayBuffer());
  return {
    status: res.statusCode,
    headers: res.headers,
    body,
    json: () => JSON.parse(body.toString('utf8')),
  };
}

/** An account and a token for it. */
export async function makeToken(
  store: AccountStore,
  name: string,
  allotmentBytes: number | null = null,
  expiresAt?: number,
): Promise<{ token: string; accountId: number; tokenId: string }> {
  const account = (await store.getAccount(name)) ?? (await store.createAccount({ name, allotmentBytes }));
  const created = await store.createToken(account.id, expiresAt !== undefined ? { expiresAt } : {});
  return { token: created.token, accountId: account.id, tokenId: created.info.id };
}

/** Blocks of a 200 answer, checked the strict way (independently of our native decoder). */
export function blocksOf(answer: Answer): Buffer[] {
  const parsed = answer.json() as { random: string[]; size: number };
  return parsed.random.map((b64) => {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) throw new Error('not strict base64');
    return Buffer.from(b64, 'base64');
  });
}
