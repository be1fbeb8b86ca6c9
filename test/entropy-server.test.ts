// The entropy API over real HTTPS on 127.0.0.1, with real accounts on SQLite and (when
// QENTROPY_PG_URL is set) PostgreSQL: every status for exactly its condition, the order
// of the checks (400, 401, 429, 403, 503), the 30-per-10-s window at its edges, the
// allotment under concurrency, uniqueness of served bytes, restarts, and bad input.
import crypto from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { Db } from '../src/storage/db.js';
import { describeEachEngine } from './helpers/databases.js';
import { blocksOf, call, FakeClock, makeToken, startTestServer, testTls, type TestServer } from './entropy-harness.js';

const T0 = Date.UTC(2025, 2, 14, 12, 0, 0);
const KIB = 1024;

describeEachEngine('entropy API', (engine) => {
  let db: Db;
  let server: TestServer;
  let clock: FakeClock;
  const extra: Array<{ close(): Promise<void> }> = [];

  beforeEach(async () => {
    await engine.reset();
    db = await engine.open();
    clock = new FakeClock(T0);
    server = await startTestServer({ db, clock });
  });
  afterEach(async () => {
    for (const x of extra.splice(0).reverse()) await x.close();
    await server.close();
    await db.close();
  });

  describe('200', () => {
    it('serves one 1,024-byte block by default, as {"random": [...], "size": 1} in application/json', async () => {
      const { token } = await makeToken(server.store, 'alice');
      const res = await call(server, '/api/v1/quantum-entropy', { token, headers: { accept: 'application/json' } });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['random', 'size']);
      expect(body.size).toBe(1);
      const blocks = blocksOf(res);
      expect(blocks).toHaveLength(1);
      expect(blocks[0]).toHaveLength(KIB);
    });

    it('serves size=N blocks for N at both ends of 1..512, each exactly 1,024 bytes', async () => {
      const { token } = await makeToken(server.store, 'alice');
      for (const size of [1, 2, 512]) {
        const res = await call(server, `/api/v1/quantum-entropy?size=${size}`, { token });
        expect(res.status).toBe(200);
        expect(res.json().size).toBe(size);
        const blocks = blocksOf(res);
        expect(blocks).toHaveLength(size);
        for (const b of blocks) expect(b).toHaveLength(KIB);
      }
    });

    it('takes the served bytes out of the pool', async () => {
      const { token } = await makeToken(server.store, 'alice');
      const before = server.pool.level;
      expect((await call(server, '/api/v1/quantum-entropy?size=3', { token })).status).toBe(200);
      expect(server.pool.level).toBe(before - 3 * KIB);
    });
  });

  describe('400: size not an integer 1..512, repeated, unknown parameters, malformed', () => {
    const bad = [
      'size=0',
      'size=513',
      'size=-1',
      'size=1.5',
      'size=1e2',
      'size=0x10',
      'size=abc',
      'size=',
      'size=%201',
      'size=99999999999999999999999',
      'size=1&size=2',
      'size=1&size=1',
      'count=1',
      'size=1&extra=x',
    ];
    it('rejects each malformed query with 400 and the error body, even without a token', async () => {
      for (const query of bad) {
        const res = await call(server, `/api/v1/quantum-entropy?${query}`);
        expect(res.status, query).toBe(400);
        const body = res.json();
        expect(typeof body.message, query).toBe('string');
        expect(Array.isArray(body.details), query).toBe(true);
      }
      expect(server.pool.level).toBe(server.pool.capacity);
    });

    it('answers 400 before 401: a bad size with a bad token is a 400', async () => {
      const res = await call(server, '/api/v1/quantum-entropy?size=600', { token: 'nonsense' });
      expect(res.status).toBe(400);
    });

    it('rejects an Accept header that excludes JSON', async () => {
      const { token } = await makeToken(server.store, 'alice');
      const res = await call(server, '/api/v1/quantum-entropy', { token, headers: { accept: 'text/html' } });
      expect(res.status).toBe(400);
    });
  });

  describe('401: missing, malformed, unknown, expired or revoked token', () => {
    it('answers each case with 401 and takes nothing', async () => {
      const { token, tokenId } = await makeToken(server.store, 'alice');
      const expired = await makeToken(server.store, 'alice', null, T0 + 1000);
      const level = server.pool.level;
      // RFC 9110 §11.6.1: every 401 carries WWW-Authenticate. RFC 6750 §3: a request with
      // no bearer token gets the bare challenge; one with a bad token, error="invalid_token".
      const bare = 'Bearer realm="qentropy"';
      const invalid = /^Bearer realm="qentropy", error="invalid_token", error_description="access token [a-z ]+"$/;
      const cases: Array<[Record<string, string>, string | RegExp]> = [
        [{}, bare],
        [{ authorization: '' }, bare],
        [{ authorization: 'Bearer' }, bare],
        [{ authorization: `Basic ${token}` }, bare],
        [{ authorization: `Bearer ${token} extra` }, invalid],
        [{ authorization: `Bearer qe_${'A'.repeat(43)}` }, invalid],
        [{ authorization: `Bearer ${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}` }, invalid],
      ];
      for (const [headers, challenge] of cases) {
        const res = await call(server, '/api/v1/quantum-entropy', { headers });
        expect(res.status, JSON.stringify(headers)).toBe(401);
        expect(res.json().message).toMatch(/token/);
        if (typeof challenge === 'string') expect(res.headers['www-authenticate'], JSON.stringify(headers)).toBe(challenge);
        else expect(res.headers['www-authenticate'], JSON.stringify(headers)).toMatch(challenge);
      }
      expect((await call(server, '/api/v1/quantum-entropy', { token: expired.token })).status).toBe(200);
      clock.now = T0 + 1000;
      const expiredAnswer = await call(server, '/api/v1/quantum-entropy', { token: expired.token });
      expect(expiredAnswer.status).toBe(401);
      expect(expiredAnswer.headers['www-authenticate']).toBe(
        'Bearer realm="qentropy", error="invalid_token", error_description="access token expired"',
      );
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
      await server.store.revokeToken(tokenId);
      const revoked = await call(server, '/api/v1/quantum-entropy', { token });
      expect(revoked.status).toBe(401);
      expect(revoked.json().message).toMatch(/revoked/);
      expect(revoked.headers['www-authenticate']).toMatch(/error="invalid_token", error_description="access token revoked"/);
      // The appliance face answers the same way.
      const appliance = await call(server, '/api/v1/entropy', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ block_size: 32, block_count: 1 }),
      });
      expect(appliance.status).toBe(401);
      expect(appliance.headers['www-authenticate']).toBe(bare);
      expect(server.pool.level).toBe(level - 2 * KIB);
    });

    it('answers 401 before 429: an unknown token is never rate limited', async () => {
      for (let i = 0; i < 35; i++) {
        expect((await call(server, '/api/v1/quantum-entropy', { token: `qe_${'B'.repeat(43)}` })).status).toBe(401);
      }
    });
  });

  describe('429: the 31st request of a token inside any 10 s', () => {
    it('allows 30, refuses the 31st with Retry-After, and allows again when the first leaves the window', async () => {
      const { token } = await makeToken(server.store, 'alice');
      for (let i = 0; i < 30; i++) {
        clock.now = T0 + i * 100; // 30 requests over 2.9 s
        expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
      }
      clock.now = T0 + 9_999; // the first request (at T0) is still inside (T0 - 10 s, now]
      const refused = await call(server, '/api/v1/quantum-entropy', { token });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(refused.json().message).toMatch(/rate limit/);
      clock.now = T0 + 10_000; // exactly 10 s later, the first request has left the window
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
      // ... but only the first: the second (T0 + 100) is still in.
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(429);
      clock.now = T0 + 10_100;
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
    });

    it('counts per token: another token of the same account is not limited', async () => {
      const a = await makeToken(server.store, 'alice');
      const b = await makeToken(server.store, 'alice');
      for (let i = 0; i < 30; i++) expect((await call(server, '/api/v1/quantum-entropy', { token: a.token })).status).toBe(200);
      expect((await call(server, '/api/v1/quantum-entropy', { token: a.token })).status).toBe(429);
      expect((await call(server, '/api/v1/quantum-entropy', { token: b.token })).status).toBe(200);
    });

    it('answers 429 before 403: a limited token with a used-up allotment gets 429', async () => {
      const { token } = await makeToken(server.store, 'small', 30 * KIB);
      for (let i = 0; i < 30; i++) expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(429);
    });
  });

  describe('403: the allotment would be exceeded', () => {
    it('refuses a request larger than what remains, takes nothing, and still serves what fits', async () => {
      const { token, accountId } = await makeToken(server.store, 'small', 5 * KIB);
      expect((await call(server, '/api/v1/quantum-entropy?size=3', { token })).status).toBe(200);
      const level = server.pool.level;
      const refused = await call(server, '/api/v1/quantum-entropy?size=3', { token });
      expect(refused.status).toBe(403);
      expect(refused.json().details[0]).toMatchObject({ requested_bytes: 3 * KIB, remaining_bytes: 2 * KIB });
      expect(server.pool.level).toBe(level);
      expect((await server.store.usage(accountId)).usedBytes).toBe(3 * KIB);
      expect((await call(server, '/api/v1/quantum-entropy?size=2', { token })).status).toBe(200);
      expect((await call(server, '/api/v1/quantum-entropy?size=1', { token })).status).toBe(403);
    });

    it('resets with the period', async () => {
      const account = await server.store.createAccount({ name: 'daily', allotmentBytes: KIB, period: { kind: 'day' } });
      const { token } = await server.store.createToken(account.id);
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(403);
      clock.now = Date.UTC(2025, 2, 15, 0, 0, 0);
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
    });

    it('never over-serves: 200 concurrent requests against 100 KiB serve exactly 100 blocks', async () => {
      // Ten tokens of one account, so the rate limit (per token) does not interfere.
      const tokens: Array<Awaited<ReturnType<typeof makeToken>>> = [];
      for (let i = 0; i < 10; i++) tokens.push(await makeToken(server.store, 'shared', 100 * KIB));
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => call(server, '/api/v1/quantum-entropy', { token: tokens[i % 10]!.token })),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(100);
      expect(statuses.filter((s) => s === 403)).toHaveLength(100);
      expect((await server.store.usage(tokens[0]!.accountId)).usedBytes).toBe(100 * KIB);
    });
  });

  describe('503: the pool holds less than the request', () => {
    it('answers 503 with Retry-After, charges nothing, and serves once the pool has enough', async () => {
      const { token, accountId } = await makeToken(server.store, 'alice', 64 * KIB);
      server.pool.take(server.pool.level); // drain
      server.pool.put(crypto.randomBytes(2 * KIB));
      const res = await call(server, '/api/v1/quantum-entropy?size=3', { token });
      expect(res.status).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(server.pool.level).toBe(2 * KIB);
      expect((await server.store.usage(accountId)).usedBytes).toBe(0);
      expect((await call(server, '/api/v1/quantum-entropy?size=2', { token })).status).toBe(200);
      expect((await server.store.usage(accountId)).usedBytes).toBe(2 * KIB);
    });

    it('answers 403 before 503: an exhausted account hitting an empty pool gets 403', async () => {
      const { token } = await makeToken(server.store, 'tiny', KIB);
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
      server.pool.take(server.pool.level);
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(403);
    });
  });

  describe('uniqueness', () => {
    it('serves 10,000 blocks to concurrent clients with no block repeated and none also given to the quality tap', async () => {
      await server.close();
      server = await startTestServer({ db, clock, poolCapacity: 12 * 1024 * KIB });
      const tokens: Array<Awaited<ReturnType<typeof makeToken>>> = [];
      for (let i = 0; i < 4; i++) tokens.push(await makeToken(server.store, 'bulk'));
      const seen = new Set<string>();
      const quality: Buffer[] = [];
      let served = 0;
      // 20 requests of 500 blocks from 4 tokens at once, while the quality tap draws too.
      const requests = Array.from({ length: 20 }, async (_, i) => {
        const res = await call(server, '/api/v1/quantum-entropy?size=500', { token: tokens[i % 4]!.token });
        expect(res.status).toBe(200);
        for (const block of blocksOf(res)) {
          seen.add(crypto.createHash('sha256').update(block).digest('hex'));
          served++;
        }
      });
      const tap = (async () => {
        for (let i = 0; i < 64; i++) {
          const piece = server.pool.takeForQuality(16 * KIB);
          if (piece) quality.push(piece);
          await new Promise((r) => setImmediate(r));
        }
      })();
      await Promise.all([...requests, tap]);
      expect(served).toBe(10_000);
      expect(seen.size).toBe(10_000);
      expect(quality.length).toBeGreaterThan(0);
      for (const piece of quality) {
        for (let off = 0; off < piece.length; off += KIB) {
          // Any 1,024-byte window of the stream that the tap got must not be a served block;
          // blocks are aligned in the pool, so aligned windows are the ones to compare.
          expect(seen.has(crypto.createHash('sha256').update(piece.subarray(off, off + KIB)).digest('hex'))).toBe(false);
        }
      }
      expect(server.pool.stats().bytesToClients).toBe(10_000 * KIB);
    });
  });

  describe('restart', () => {
    it('keeps tokens and allotment usage', async () => {
      const { token, accountId } = await makeToken(server.store, 'alice', 4 * KIB);
      expect((await call(server, '/api/v1/quantum-entropy?size=3', { token })).status).toBe(200);
      await server.close();
      await db.close();
      db = await engine.open();
      server = await startTestServer({ db, clock });
      expect((await server.store.usage(accountId)).usedBytes).toBe(3 * KIB);
      expect((await call(server, '/api/v1/quantum-entropy?size=2', { token })).status).toBe(403);
      expect((await call(server, '/api/v1/quantum-entropy?size=1', { token })).status).toBe(200);
    });
  });

  describe(`two instances on one ${engine.name === 'postgres' ? 'PostgreSQL database' : 'SQLite file'}`, () => {
    it('share tokens, allotment usage and the rate-limit window', async () => {
      const db2 = await engine.open();
      const second = await startTestServer({ db: db2, clock });
      extra.push({ close: () => db2.close() }, second);
      const { token, accountId } = await makeToken(server.store, 'both', 40 * KIB);
      // A token made on one instance works on the other.
      expect((await call(second, '/api/v1/quantum-entropy', { token })).status).toBe(200);
      // 29 more spread over both: 30 in the window; the 31st is refused on either.
      for (let i = 0; i < 29; i++) {
        const target = i % 2 === 0 ? server : second;
        expect((await call(target, '/api/v1/quantum-entropy', { token })).status).toBe(200);
      }
      expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(429);
      expect((await call(second, '/api/v1/quantum-entropy', { token })).status).toBe(429);
      // The allotment is shared too: 30 KiB used, 10 KiB left, concurrently over both.
      clock.now += 10_000;
      const more = await Promise.all(
        Array.from({ length: 20 }, (_, i) => call(i % 2 ? server : second, '/api/v1/quantum-entropy', { token })),
      );
      expect(more.filter((r) => r.status === 200)).toHaveLength(10);
      expect(more.filter((r) => r.status === 403)).toHaveLength(10);
      expect((await second.store.usage(accountId)).usedBytes).toBe(40 * KIB);
    });
  });
});

describeEachEngine('entropy API: appliance face, operations and bad input', (engine) => {
  let db: Db;
  let server: TestServer;

  beforeEach(async () => {
    await engine.reset();
    db = await engine.open();
    server = await startTestServer({ db, poolCapacity: 1024 * KIB });
  });
  afterEach(async () => {
    await server.close();
    await db.close();
  });

  it('POST /api/v1/entropy serves block_count blocks of block_size bytes from the same accounts', async () => {
    const { token, accountId } = await makeToken(server.store, 'appliance', 10_000);
    const res = await call(server, '/api/v1/entropy', {
      method: 'POST',
      token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ block_size: 100, block_count: 7 }),
    });
    expect(res.status).toBe(200);
    const body = res.json();
    expect(body.extensions).toEqual([]);
    expect(body.entropy).toHaveLength(7);
    for (const b64 of body.entropy as string[]) expect(Buffer.from(b64, 'base64')).toHaveLength(100);
    expect((await server.store.usage(accountId)).usedBytes).toBe(700);
    const refused = await call(server, '/api/v1/entropy', {
      method: 'POST',
      token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ block_size: 1024, block_count: 10 }),
    });
    expect(refused.status).toBe(403);
  });

  it('POST /api/v1/entropy rejects bodies outside the schema with 400', async () => {
    const { token } = await makeToken(server.store, 'appliance');
    const bodies = [
      { block_size: 0, block_count: 1 },
      { block_size: 1025, block_count: 1 },
      { block_size: 16, block_count: 513 },
      { block_size: 1.5, block_count: 1 },
      { block_size: '16', block_count: 1 },
      { block_size: 16 },
      { block_size: 16, block_count: 1, extra: true },
      [1, 2],
      null,
    ];
    for (const body of bodies) {
      const res = await call(server, '/api/v1/entropy', {
        method: 'POST',
        token,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(Array.isArray(res.json().details)).toBe(true);
    }
  });

  it('GET /api/v1/capabilities describes the appliance face', async () => {
    const res = await call(server, '/api/v1/capabilities');
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ block_size: { min: 1, max: 1024 }, block_count: { min: 1, max: 512 } });
  });

  it('/healthz reports the pool, the source and the development warning', async () => {
    const res = await call(server, '/healthz');
    expect(res.status).toBe(200);
    const body = res.json();
    expect(body.pool.level).toBe(server.pool.level);
    expect(body.source.development).toBe(true);
    expect(body.warnings.join(' ')).toMatch(/development/);
    // README's `curl /healthz; curl /metrics` must not run the JSON into `# HELP` (issue 27).
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body.toString('utf8').endsWith('}\n')).toBe(true);
  });

  it('/metrics counts requests by route and status, bytes served and the pool level', async () => {
    const { token } = await makeToken(server.store, 'alice');
    await call(server, '/api/v1/quantum-entropy?size=2', { token });
    await call(server, '/api/v1/quantum-entropy?size=0', { token });
    const text = (await call(server, '/metrics')).body.toString();
    expect(text).toMatch(/qentropy_entropy_requests_total\{route="\/api\/v1\/quantum-entropy",status="200"\} 1/);
    expect(text).toMatch(/qentropy_entropy_requests_total\{route="\/api\/v1\/quantum-entropy",status="400"\} 1/);
    expect(text).toMatch(/qentropy_entropy_bytes_served_total\{route="\/api\/v1\/quantum-entropy"\} 2048/);
    expect(text).toContain(`qentropy_pool_level_bytes ${server.pool.level}`);
    expect(text).toMatch(/qentropy_source_state\{source="test-fill",state="ok"\} 1/);
  });

  it('answers wrong methods, unknown paths and bad bodies with 4xx JSON errors and stays up', async () => {
    const { token } = await makeToken(server.store, 'alice');
    const expectError = async (res: Awaited<ReturnType<typeof call>>, status: number) => {
      expect(res.status).toBe(status);
      const body = res.json();
      expect(typeof body.message).toBe('string');
      expect(Array.isArray(body.details)).toBe(true);
    };
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']) {
      const res = await call(server, '/api/v1/quantum-entropy', { method, token });
      expect(res.status, method).toBe(405);
      expect(res.headers.allow).toBe('GET');
      if (method !== 'HEAD') await expectError(res, 405);
    }
    await expectError(await call(server, '/api/v1/entropy', { token }), 405);
    await expectError(await call(server, '/nope', { token }), 404);
    const json = { 'content-type': 'application/json' };
    await expectError(await call(server, '/api/v1/entropy', { method: 'POST', token, headers: json, body: '{"block_size": 1,' }), 400);
    await expectError(await call(server, '/api/v1/entropy', { method: 'POST', token, headers: json, body: '' }), 400);
    await expectError(
      await call(server, '/api/v1/entropy', { method: 'POST', token, headers: { 'content-type': 'text/plain' }, body: 'hi' }),
      415,
    );
    await expectError(
      await call(server, '/api/v1/entropy', { method: 'POST', token, headers: json, body: JSON.stringify({ pad: 'x'.repeat(10_000) }) }),
      413,
    );
    await expectError(await call(server, `/api/v1/quantum-entropy?size=${'9'.repeat(5000)}`, { token }), 400);
    // Headers beyond the 8 KiB limit: 431 in the same JSON shape.
    await expectError(await call(server, '/api/v1/quantum-entropy', { token, headers: { 'x-long': 'a'.repeat(16 * 1024) } }), 431);
    // A request line that is not HTTP at all, over TLS.
    const garbage = await rawTls(server, 'THIS IS NOT HTTP\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400/);
    expect(garbage).toContain('"message"');
    // The server is still up and serving.
    expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
  });

  it('answers requests Node handles before Fastify (CONNECT, no Host) with a status and the JSON error body', async () => {
    const answer = (raw: string) => {
      const [head, body] = raw.split('\r\n\r\n', 2);
      return { statusLine: head!.split('\r\n', 1)[0], head: head!, body: JSON.parse(body!) };
    };
    // CONNECT used to get no answer at all: Node closes the socket when nothing listens.
    for (const text of ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 'CONNECT 127.0.0.1:80 HTTP/1.0\r\n\r\n']) {
      const connect = answer(await rawTls(server, text));
      expect(connect.statusLine).toBe('HTTP/1.1 405 Method Not Allowed');
      expect(connect.head).toMatch(/\r\nAllow: \r\n/);
      expect(connect.body).toEqual({ message: 'method CONNECT not allowed: this server is not a proxy', details: [{ method: 'CONNECT', allow: [] }] });
    }
    // HTTP/1.1 without Host: RFC 9112 §3.2 requires 400; Node sent it with an empty body.
    const noHost = answer(await rawTls(server, 'GET /healthz HTTP/1.1\r\n\r\n'));
    expect(noHost.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(noHost.body).toEqual({ message: 'request has no Host header', details: [{ header: 'Host', problem: 'missing' }] });
    // HTTP/1.0 needs no Host.
    expect(await rawTls(server, 'GET /healthz HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 /);
    const { token } = await makeToken(server.store, 'alice');
    expect((await call(server, '/api/v1/quantum-entropy', { token })).status).toBe(200);
  });

  it('speaks TLS 1.3 only by default and presents a certificate the test CA trusts', async () => {
    const { ca } = await testTls();
    const port = Number(new URL(server.url).port);
    const refused = await new Promise<string>((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port, ca: ca.certPem, maxVersion: 'TLSv1.2' }, () => resolve('connected'));
      socket.on('error', (err) => resolve(err.message));
    });
    expect(refused).not.toBe('connected');
    const version = await new Promise<string>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, ca: ca.certPem }, () => {
        resolve(socket.getProtocol() ?? '');
        socket.end();
      });
      socket.on('error', reject);
    });
    expect(version).toBe('TLSv1.3');
    // Plain TCP (no TLS) to the HTTPS port is not served.
    const plain = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
      let data = '';
      socket.on('data', (d) => (data += d.toString('latin1')));
      socket.on('close', () => resolve(data));
      socket.on('error', () => resolve(data));
    });
    expect(plain).not.toContain('"status"');
  });
});

async function rawTls(server: TestServer, text: string): Promise<string> {
  const { ca } = await testTls();
  const port = Number(new URL(server.url).port);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca: ca.certPem }, () => socket.write(text));
    let data = '';
    socket.on('data', (d) => (data += d.toString('latin1')));
    socket.on('end', () => resolve(data));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
  });
}
