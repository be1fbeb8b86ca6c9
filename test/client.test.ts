// The entropy client against real local HTTPS servers: a scripted one that answers with
// chosen statuses (to drive the retry policy), and our own service.
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import { main } from '../src/cli/main.js';
import { EntropyClient, EntropyClientError, entropyStream, fetchEntropy, RetryPolicy } from '../src/client/index.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import { call, makeToken, startTestServer, testTls, type TestServer } from './entropy-harness.js';

const TOKEN = `qe_${'t'.repeat(43)}`;

interface Scripted {
  url: string;
  /** Requests seen: time (ms) and the query's size. */
  seen: Array<{ at: number; size: string | null; auth: string | undefined }>;
  close(): Promise<void>;
}

type Step = { status: number; headers?: Record<string, string>; body?: string } | 'ok' | 'hang';

function goodBody(size: number): string {
  return JSON.stringify({ random: Array.from({ length: size }, () => crypto.randomBytes(1024).toString('base64')), size });
}

/** An HTTPS server that answers each request with the next step of `script` (the last repeats). */
async function scripted(script: Step[]): Promise<Scripted> {
  const { cert, key } = await testTls();
  const seen: Scripted['seen'] = [];
  let i = 0;
  const server = https.createServer({ cert, key }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    seen.push({ at: Date.now(), size: url.searchParams.get('size'), auth: req.headers.authorization });
    const step = script[Math.min(i++, script.length - 1)]!;
    if (step === 'hang') return; // never answers
    if (step === 'ok') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(goodBody(Number(url.searchParams.get('size') ?? 1)));
    }
    res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
    res.end(step.body ?? JSON.stringify({ message: `status ${step.status}`, details: [] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `https://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let ca: string;
const servers: Array<{ close(): Promise<void> }> = [];
beforeAll(async () => {
  ca = (await testTls()).ca.certPem;
});
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function serve(script: Step[]): Promise<Scripted> {
  const s = await scripted(script);
  servers.push(s);
  return s;
}

describe('retry policy against a real server', () => {
  it('honours Retry-After on 429 and 503, then succeeds', async () => {
    const s = await serve([
      { status: 429, headers: { 'retry-after': '1' } },
      { status: 503, headers: { 'retry-after': '1' } },
      'ok',
    ]);
    const started = Date.now();
    const data = await fetchEntropy({ url: s.url, token: TOKEN, ca, size: 2, retry: { baseDelayMs: 10 } });
    expect(data).toHaveLength(2048);
    expect(s.seen).toHaveLength(3);
    expect(s.seen[1]!.at - s.seen[0]!.at).toBeGreaterThanOrEqual(990);
    expect(s.seen[2]!.at - s.seen[1]!.at).toBeGreaterThanOrEqual(990);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(s.seen.every((r) => r.size === '2' && r.auth === `Bearer ${TOKEN}`)).toBe(true);
  });

  it('backs off on 500 and network-level failures without Retry-After, with growing delays', async () => {
    const s = await serve([{ status: 500 }, { status: 502 }, { status: 500 }, 'ok']);
    const data = await fetchEntropy({ url: s.url, token: TOKEN, ca, retry: { baseDelayMs: 100, random: () => 0.999 } });
    expect(data).toHaveLength(1024);
    const gaps = s.seen.slice(1).map((r, i) => r.at - s.seen[i]!.at);
    // Ceilings 100, 200, 400 ms with the jitter pinned near the top.
    expect(gaps[0]).toBeGreaterThanOrEqual(90);
    expect(gaps[1]).toBeGreaterThanOrEqual(190);
    expect(gaps[2]).toBeGreaterThanOrEqual(390);
  });

  it('retries a refused connection (nothing listening) and gives up after maxAttempts', async () => {
    const s = await scripted(['ok']);
    const url = s.url;
    await s.close();
    const err = await fetchEntropy({ url, token: TOKEN, ca, retry: { baseDelayMs: 5, maxAttempts: 3 } }).catch((e) => e);
    expect(err).toBeInstanceOf(EntropyClientError);
    expect(err.errorClass).toBe('transient');
    expect(err.message).toMatch(/ECONNREFUSED|failed/);
  });

  it('stops at once on 401 and 400 (fatal)', async () => {
    for (const status of [401, 400]) {
      const s = await serve([{ status }, 'ok']);
      const err = await fetchEntropy({ url: s.url, token: TOKEN, ca, retry: { baseDelayMs: 1 } }).catch((e) => e);
      expect(err).toBeInstanceOf(EntropyClientError);
      expect(err.status).toBe(status);
      expect(err.errorClass).toBe('fatal');
      expect(s.seen).toHaveLength(1);
    }
  });

  it('waits at least the allotment wait after 403 (or fails at once when told not to wait)', async () => {
    const s = await serve([{ status: 403 }, 'ok']);
    const data = await fetchEntropy({ url: s.url, token: TOKEN, ca, retry: { allotmentWaitMs: 300 } });
    expect(data).toHaveLength(1024);
    expect(s.seen[1]!.at - s.seen[0]!.at).toBeGreaterThanOrEqual(290);

    const t = await serve([{ status: 403 }, 'ok']);
    const err = await fetchEntropy({ url: t.url, token: TOKEN, ca, retry: { waitOnAllotment: false } }).catch((e) => e);
    expect(err.status).toBe(403);
    expect(t.seen).toHaveLength(1);
  });

  it('resets the backoff after a success', () => {
    const policy = new RetryPolicy({ baseDelayMs: 100, random: () => 0.999 });
    const e503 = new EntropyClientError('x', 'transient', 503);
    expect(policy.nextDelay(e503)).toBe(99);
    expect(policy.nextDelay(e503)).toBe(199);
    expect(policy.nextDelay(e503)).toBe(399);
    policy.succeeded();
    expect(policy.nextDelay(e503)).toBe(99);
    // The default 403 wait is at least a minute, or the server's Retry-After if longer.
    const p403 = new RetryPolicy();
    expect(p403.nextDelay(new EntropyClientError('x', 'allotment', 403))).toBe(60_000);
    expect(p403.nextDelay(new EntropyClientError('x', 'allotment', 403, 3_600_000))).toBe(3_600_000);
  });

  it('times out a request that never answers', async () => {
    const s = await serve(['hang']);
    const started = Date.now();
    const err = await fetchEntropy({ url: s.url, token: TOKEN, ca, timeoutMs: 300, retry: { maxAttempts: 1 } }).catch((e) => e);
    expect(err).toBeInstanceOf(EntropyClientError);
    expect(err.message).toMatch(/timed out|timeout/i);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('refuses a server whose certificate it does not trust', async () => {
    const s = await serve(['ok']);
    const err = await fetchEntropy({ url: s.url, token: TOKEN, retry: { maxAttempts: 1 } }).catch((e) => e);
    expect(err).toBeInstanceOf(EntropyClientError);
    expect(err.message).toMatch(/certificate|self.signed|issuer/i);
  });
});

describe('validation of every block', () => {
  const cases: Array<[string, string]> = [
    ['a block of 1,023 bytes', JSON.stringify({ random: [crypto.randomBytes(1023).toString('base64')], size: 1 })],
    ['a block of 1,025 bytes', JSON.stringify({ random: [crypto.randomBytes(1025).toString('base64')], size: 1 })],
    ['non-base64 characters', JSON.stringify({ random: [`${crypto.randomBytes(1020).toString('base64')}!!!!!!!!`], size: 1 })],
    ['base64url instead of base64', JSON.stringify({ random: [Buffer.alloc(1024, 0xfb).toString('base64url')], size: 1 })],
    ['size not matching the array', JSON.stringify({ random: [crypto.randomBytes(1024).toString('base64')], size: 2 })],
    ['fewer blocks than asked', JSON.stringify({ random: [], size: 0 })],
    ['not JSON', 'random!'],
  ];
  for (const [name, body] of cases) {
    it(`rejects ${name}`, async () => {
      const s = await serve([{ status: 200, body }]);
      const err = await fetchEntropy({ url: s.url, token: TOKEN, ca, retry: { maxAttempts: 1 } }).catch((e) => e);
      expect(err).toBeInstanceOf(EntropyClientError);
      expect(err.message).toMatch(/invalid entropy response/);
    });
  }
});

describe('messages that say what the server did', () => {
  it('a body cut off mid-JSON is reported as malformed JSON, not as a short block', async () => {
    const s = await serve([{ status: 200, body: '{"random": ["AAAA", ' }]);
    const err = await fetchEntropy({ url: s.url, token: TOKEN, ca, retry: { maxAttempts: 1 } }).catch((e) => e);
    expect(err).toBeInstanceOf(EntropyClientError);
    expect(err.message).toBe('invalid entropy response: not valid JSON (Unexpected end of JSON input; 20 bytes received)');
  });

  it("a 429 reports the server's own message and Retry-After, not our limit", async () => {
    const s = await serve([{ status: 429, headers: { 'retry-after': '7' }, body: JSON.stringify({ message: 'quota: 5 requests per minute' }) }]);
    const err = await fetchEntropy({ url: s.url, token: TOKEN, ca, retry: { maxAttempts: 1 } }).catch((e) => e);
    expect(err.message).toBe('rate limited by the server (429): quota: 5 requests per minute (Retry-After: 7 s)');
    expect(err.retryAfterMs).toBe(7000);
    // A 429 with no body and no Retry-After says only that.
    const bare = await serve([{ status: 429, body: '' }]);
    const bareErr = await fetchEntropy({ url: bare.url, token: TOKEN, ca, retry: { maxAttempts: 1 } }).catch((e) => e);
    expect(bareErr.message).toBe('rate limited by the server (429)');
  });
});

describe('against our own service', () => {
  let db: Db;
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-client-'));
    db = await openDatabase({ url: `sqlite:${path.join(dir, 'client.db')}` });
    server = await startTestServer({ db, poolCapacity: 2 * 1024 * 1024 });
  });
  afterAll(async () => {
    await server.close();
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('fetchEntropy and entropyStream deliver exactly what was asked', async () => {
    const { token } = await makeToken(server.store, 'client');
    expect(await fetchEntropy({ url: server.url, token, ca: server.caPem, size: 5 })).toHaveLength(5 * 1024);
    const chunks: Buffer[] = [];
    for await (const chunk of entropyStream({ url: server.url, token, ca: server.caPem, totalBytes: 10_000, blocksPerRequest: 4 })) {
      chunks.push(chunk);
    }
    expect(chunks.map((c) => c.length)).toEqual([4096, 4096, 1808]);
    const client = new EntropyClient({ url: `${server.url}/api/v1/quantum-entropy`, token, ca: server.caPem });
    expect(await client.fetchOnce(1)).toHaveLength(1024);
    // The appliance face, same client, same token.
    expect(await client.fetchApplianceOnce(48, 3)).toHaveLength(144);
    await expect(client.fetchApplianceOnce(0, 1)).rejects.toThrow(/block_size/);
    await client.close();
  });

  it('qentropy fetch writes the bytes to --out and prints one-line errors per status', async () => {
    const { token } = await makeToken(server.store, 'cli', 8 * 1024);
    const caFile = path.join(dir, 'ca.pem');
    fs.writeFileSync(caFile, server.caPem);
    const tokenFile = path.join(dir, 'token');
    fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    const out = path.join(dir, 'out.bin');
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const base = ['fetch', '--url', server.url, '--ca', caFile, '--token-file', tokenFile];
      expect(await main([...base, '--bytes', '5000', '--size', '2', '--out', out])).toBe(0);
      expect(fs.statSync(out).size).toBe(5000);
      expect(fs.statSync(out).mode & 0o777).toBe(0o600);
      const hexOut = path.join(dir, 'out.hex');
      expect(await main([...base, '--format', 'hex', '--out', hexOut])).toBe(0);
      expect(fs.readFileSync(hexOut, 'utf8')).toMatch(/^[0-9a-f]{2048}\n$/);
      // 5 + 1 KiB used of 8: asking for 3 more blocks is a 403, said in one line.
      expect(await main([...base, '--size', '3', '--out', out])).toBe(1);
      const lines = stderr.mock.calls.map((c) => String(c[0]));
      expect(lines.at(-1)).toMatch(/^qentropy: allotment for this period used up \(403\)/);
      expect(lines.at(-1)!.trim().split('\n')).toHaveLength(1);
      fs.writeFileSync(tokenFile, `qe_${'Z'.repeat(43)}\n`);
      expect(await main([...base, '--out', out])).toBe(1);
      expect(String(stderr.mock.calls.at(-1)![0])).toMatch(/^qentropy: access token rejected \(401\)/);
      expect(await main(['fetch', '--url', server.url, '--size', '600', '--token-file', tokenFile])).toBe(2);
      expect(String(stderr.mock.calls.at(-1)![0])).toMatch(/--size must be an integer from 1 to 512/);
    } finally {
      stderr.mockRestore();
    }
    expect((await call(server, '/healthz')).status).toBe(200);
  });
});
