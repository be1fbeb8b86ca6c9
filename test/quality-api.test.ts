// The quality APIs over HTTP on 127.0.0.1, against records in real storage (SQLite, and
// PostgreSQL when QENTROPY_PG_URL is set): every parameter at its edges and beyond, strict
// vs loose, include_random only when strict, randsize cutting at the right bit (checked
// against the stored bytes), IMF-fixdate createdAt, UTC time strings, 503 when storage is
// down, and the error body everywhere.
import crypto from 'node:crypto';
import net from 'node:net';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildQualityApp } from '../src/quality/api.js';
import { bitsToText, textToBits } from '../src/quality/bitstring.js';
import type { TestResultRecord } from '../src/quality/record.js';
import { KEPT_BITS, QualityStore, type NewRun } from '../src/quality/store.js';
import type { Db } from '../src/storage/db.js';
import { describeEachEngine } from './helpers/databases.js';

const FULL_KEYS = [
  'tests_passed', 'time_of_completion', 'time_of_completion_string', 'nist_all_passed', 'nist_fails', 'nist_passes',
  'nist_success_rate', 'uniformity_all_passed', 'uniformity_fails', 'uniformity_passes', 'uniformity_success_rate',
].sort();
const SIMPLE_KEYS = ['tests_passed', 'time_of_completion', 'time_of_completion_string'].sort();
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const MDY = /^(\d{2})\/(\d{2})\/(\d{4}) (\d{2}):(\d{2})$/;

type Kind = 'pass' | 'nist-only' | 'uniformity-only' | 'strict' | 'error';

interface Seeded {
  id: number;
  kind: Kind;
  completedMs: number;
  data?: Buffer;
}

/** A record as the battery would give it for each kind of outcome (values invented, consistent). */
function recordFor(kind: Kind, completedMs: number): { record: TestResultRecord; strict: boolean; loose: boolean } {
  const nistOk = kind === 'pass' || kind === 'uniformity-only';
  const uniOk = kind === 'pass' || kind === 'nist-only';
  const d = new Date(completedMs);
  const p2 = (n: number) => String(n).padStart(2, '0');
  const record: TestResultRecord = {
    tests_passed: nistOk || uniOk,
    time_of_completion: completedMs / 1000,
    time_of_completion_string: `${p2(d.getUTCMonth() + 1)}/${p2(d.getUTCDate())}/${d.getUTCFullYear()} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}`,
    nist_all_passed: nistOk,
    nist_fails: nistOk ? 86 : 900,
    nist_passes: nistOk ? 8742 : 7928,
    nist_success_rate: nistOk ? 8742 / 8828 : 7928 / 8828,
    uniformity_all_passed: uniOk,
    uniformity_fails: uniOk ? 0 : 3,
    uniformity_passes: uniOk ? 15 : 12,
    uniformity_success_rate: uniOk ? 1 : 0.8,
  };
  return { record, strict: !nistOk && !uniOk, loose: !nistOk || !uniOk };
}

describeEachEngine('quality APIs', (engine) => {
  let db: Db;
  let store: QualityStore;
  let app: FastifyInstance;
  let base: string;
  const seeded: Seeded[] = [];

  // Oldest first; every failing run keeps 5,242,880 bits. Milliseconds make the fractions visible.
  const KINDS: Kind[] = ['strict', 'pass', 'nist-only', 'error', 'strict', 'uniformity-only', 'pass', 'strict', 'pass', 'error', 'pass'];
  const T0 = Date.UTC(2025, 10, 23, 9, 59, 30, 250);

  beforeAll(async () => {
    await engine.reset();
    db = await engine.open();
    store = await QualityStore.open(db);
    for (const [i, kind] of KINDS.entries()) {
      const completedMs = T0 + i * 600_000 + i * 7;
      let run: NewRun;
      let data: Buffer | undefined;
      if (kind === 'error') {
        run = { status: 'error', startedMs: completedMs - 1000, completedMs, source: 'test', streams: 100, bitsPerStream: 1e6, error: 'source down', report: { status: 'error' } };
      } else {
        const { record, strict, loose } = recordFor(kind, completedMs);
        data = loose ? crypto.randomBytes(KEPT_BITS / 8) : undefined;
        run = {
          status: 'completed', startedMs: completedMs - 30_000, completedMs, source: 'test', streams: 100, bitsPerStream: 1e6,
          record, strictlyFailing: strict, looselyFailing: loose, report: { status: 'completed', record },
          ...(data ? { data: { bytes: data, bits: KEPT_BITS, expiresMs: null } } : {}),
        };
      }
      const id = await store.insertRun(run);
      seeded.push({ id, kind, completedMs, ...(data ? { data } : {}) });
    }
    app = await buildQualityApp({ store, logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address() as { port: number };
    base = `http://127.0.0.1:${addr.port}`;
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  const get = async (path: string) => {
    const res = await fetch(base + path);
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: JSON.parse(text) as unknown };
  };
  const newest = (pred: (s: Seeded) => boolean) => [...seeded].reverse().filter(pred);
  const completed = (s: Seeded) => s.kind !== 'error';
  const strict = (s: Seeded) => s.kind === 'strict';
  const loose = (s: Seeded) => s.kind === 'strict' || s.kind === 'nist-only' || s.kind === 'uniformity-only';

  function expectBadRequest(r: { status: number; body: unknown; headers: Headers }, parameter?: string) {
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const body = r.body as { message: unknown; details: { parameter?: string }[] };
    expect(Object.keys(body).sort()).toEqual(['details', 'message']);
    expect(typeof body.message).toBe('string');
    expect(Array.isArray(body.details)).toBe(true);
    if (parameter) expect(body.details.map((d) => d.parameter)).toContain(parameter);
  }

  it('logs: default 5 newest completed records, full fields, newest first, errors left out', async () => {
    const r = await get('/api/v1/logs');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const body = r.body as TestResultRecord[];
    const want = newest(completed).slice(0, 5);
    expect(body).toHaveLength(5);
    expect(body.map((x) => x.time_of_completion)).toEqual(want.map((s) => s.completedMs / 1000));
    for (const rec of body) expect(Object.keys(rec).sort()).toEqual(FULL_KEYS);
    expect(body[0]!.time_of_completion % 1).not.toBe(0); // fractions of a second
  });

  it('logs: num at its edges, simple=true keeps three fields', async () => {
    expect(((await get('/api/v1/logs?num=1')).body as unknown[]).length).toBe(1);
    const all = (await get('/api/v1/logs?num=100')).body as TestResultRecord[];
    expect(all).toHaveLength(newest(completed).length);
    const simple = (await get('/api/v1/logs?simple=true&num=100')).body as Record<string, unknown>[];
    expect(simple).toHaveLength(all.length);
    for (const [i, rec] of simple.entries()) {
      expect(Object.keys(rec).sort()).toEqual(SIMPLE_KEYS);
      expect(rec.time_of_completion).toBe(all[i]!.time_of_completion);
    }
    const notSimple = (await get('/api/v1/logs?simple=false&num=2')).body as Record<string, unknown>[];
    expect(Object.keys(notSimple[0]!).sort()).toEqual(FULL_KEYS);
  });

  it('time_of_completion_string is MM/DD/YYYY HH:MM in UTC', async () => {
    const body = (await get('/api/v1/logs?num=100')).body as TestResultRecord[];
    for (const rec of body) {
      const m = MDY.exec(rec.time_of_completion_string);
      expect(m).not.toBeNull();
      const d = new Date(rec.time_of_completion * 1000);
      expect(Number(m![1])).toBe(d.getUTCMonth() + 1);
      expect(Number(m![2])).toBe(d.getUTCDate());
      expect(Number(m![3])).toBe(d.getUTCFullYear());
      expect(Number(m![4])).toBe(d.getUTCHours());
      expect(Number(m![5])).toBe(d.getUTCMinutes());
    }
    // The oldest seeded run: 2025-11-23 09:59:30.250 UTC.
    expect(body.at(-1)!.time_of_completion_string).toBe('11/23/2025 09:59');
    expect(body.at(-1)!.time_of_completion).toBe(1763891970.25);
  });

  it.each([
    ['num=0', 'num'], ['num=101', 'num'], ['num=-1', 'num'], ['num=1.5', 'num'], ['num=abc', 'num'], ['num=', 'num'],
    ['num=%201', 'num'], ['num=1e1', 'num'], ['num=0x5', 'num'], ['num=1&num=2', 'num'], ['simple=TRUE', 'simple'],
    ['simple=1', 'simple'], ['simple=', 'simple'], ['simple=yes', 'simple'], ['simple=true&simple=true', 'simple'],
    ['strict=true', 'strict'], ['nums=5', 'nums'], ['include_random=true', 'include_random'],
  ])('logs?%s is 400', async (query, parameter) => {
    expectBadRequest(await get(`/api/v1/logs?${query}`), parameter);
  });

  it('failing_logs: strict by default (both criteria failed), newest first', async () => {
    const want = newest(strict);
    const body = (await get('/api/v1/failing_logs?num=100')).body as TestResultRecord[];
    expect(body.map((x) => x.time_of_completion)).toEqual(want.map((s) => s.completedMs / 1000));
    for (const rec of body) {
      expect(rec.nist_all_passed).toBe(false);
      expect(rec.uniformity_all_passed).toBe(false);
      expect(Object.keys(rec).sort()).toEqual(FULL_KEYS);
    }
    const explicit = (await get('/api/v1/failing_logs?num=100&strict=true')).body;
    expect(explicit).toEqual(body);
    expect(((await get('/api/v1/failing_logs')).body as unknown[]).length).toBe(Math.min(5, want.length));
  });

  it('failing_logs: strict=false returns runs failing either criterion', async () => {
    const want = newest(loose);
    const body = (await get('/api/v1/failing_logs?num=100&strict=false')).body as TestResultRecord[];
    expect(body.map((x) => x.time_of_completion)).toEqual(want.map((s) => s.completedMs / 1000));
    expect(body.some((r) => r.nist_all_passed && !r.uniformity_all_passed)).toBe(true);
    expect(body.some((r) => !r.nist_all_passed && r.uniformity_all_passed)).toBe(true);
    expect(((await get('/api/v1/failing_logs?num=2&strict=false')).body as unknown[]).length).toBe(2);
    const simple = (await get('/api/v1/failing_logs?num=100&strict=false&simple=true')).body as Record<string, unknown>[];
    for (const rec of simple) expect(Object.keys(rec).sort()).toEqual(SIMPLE_KEYS);
  });

  it('failing_logs: include_random (strict) gives the first randsize bits of the stored data', async () => {
    const want = newest(strict);
    const body = (await get('/api/v1/failing_logs?num=100&include_random=true')).body as (TestResultRecord & { random: string })[];
    expect(body).toHaveLength(want.length);
    for (const [i, rec] of body.entries()) {
      expect(Object.keys(rec).sort()).toEqual([...FULL_KEYS, 'random'].sort());
      expect(rec.random).toHaveLength(1024); // default randsize
      expect(rec.random).toBe(expectedBits(want[i]!.data!, 1024));
    }
    const simple = (await get('/api/v1/failing_logs?num=1&include_random=true&simple=true&randsize=9')).body as Record<string, unknown>[];
    expect(Object.keys(simple[0]!).sort()).toEqual([...SIMPLE_KEYS, 'random'].sort());
    expect(simple[0]!.random).toBe(expectedBits(want[0]!.data!, 9));
  });

  it('failing_logs: include_random is ignored when not strict', async () => {
    const body = (await get('/api/v1/failing_logs?num=100&strict=false&include_random=true&randsize=77')).body as Record<string, unknown>[];
    expect(body).toHaveLength(newest(loose).length);
    for (const rec of body) expect(rec).not.toHaveProperty('random');
    const off = (await get('/api/v1/failing_logs?num=100&include_random=false&randsize=77')).body as Record<string, unknown>[];
    for (const rec of off) expect(rec).not.toHaveProperty('random');
  });

  it('randsize cuts at the right bit: 1, 7, 8, 9, 1023, 5,242,879 and 5,242,880', async () => {
    const data = newest(strict)[0]!.data!;
    for (const randsize of [1, 7, 8, 9, 1023]) {
      const [rec] = (await get(`/api/v1/failing_random?num=1&randsize=${randsize}`)).body as { random: string }[];
      expect(rec!.random).toBe(expectedBits(data, randsize));
    }
    for (const randsize of [KEPT_BITS - 1, KEPT_BITS]) {
      const [rec] = (await get(`/api/v1/failing_logs?num=1&include_random=true&randsize=${randsize}`)).body as { random: string }[];
      expect(rec!.random.length).toBe(randsize);
      // Packed back, the characters are exactly the stored bytes (last byte's spare bits zero).
      const packed = textToBits(rec!.random);
      const want = Buffer.from(data.subarray(0, Math.ceil(randsize / 8)));
      if (randsize % 8) want[want.length - 1]! &= 0xff << (8 - (randsize % 8));
      expect(packed.equals(want)).toBe(true);
    }
  });

  it('failing_random: strictly failing runs, random then time_of_completion then createdAt (IMF-fixdate)', async () => {
    const want = newest(strict);
    const r = await get('/api/v1/failing_random?num=100');
    expect(r.status).toBe(200);
    const body = r.body as { random: string; time_of_completion: number; createdAt: string }[];
    expect(body).toHaveLength(want.length);
    for (const [i, rec] of body.entries()) {
      expect(Object.keys(rec)).toEqual(['random', 'time_of_completion', 'createdAt']);
      expect(rec.random).toBe(expectedBits(want[i]!.data!, 1024));
      expect(rec.time_of_completion).toBe(want[i]!.completedMs / 1000);
      expect(rec.createdAt).toMatch(IMF_FIXDATE);
      expect(Date.parse(rec.createdAt)).toBe(Math.floor(want[i]!.completedMs / 1000) * 1000);
    }
    expect(((await get('/api/v1/failing_random')).body as unknown[]).length).toBe(Math.min(5, want.length));
    expect(((await get('/api/v1/failing_random?num=1')).body as unknown[]).length).toBe(1);
  });

  it.each([
    ['failing_logs', 'randsize=0', 'randsize'], ['failing_logs', 'randsize=5242881', 'randsize'],
    ['failing_logs', 'randsize=1024.0', 'randsize'], ['failing_logs', 'strict=False', 'strict'],
    ['failing_logs', 'include_random=1', 'include_random'], ['failing_logs', 'strict=true&strict=false', 'strict'],
    ['failing_logs', 'num=101', 'num'], ['failing_logs', 'num=0', 'num'], ['failing_logs', 'random=true', 'random'],
    ['failing_random', 'randsize=0', 'randsize'], ['failing_random', 'randsize=5242881', 'randsize'],
    ['failing_random', 'num=101', 'num'], ['failing_random', 'num=0', 'num'], ['failing_random', 'strict=true', 'strict'],
    ['failing_random', 'simple=true', 'simple'], ['failing_random', 'randsize=1&randsize=2', 'randsize'],
    ['failing_random', 'randsize=-5', 'randsize'], ['failing_random', 'randsize=99999999999999999999', 'randsize'],
  ])('%s?%s is 400', async (endpoint, query, parameter) => {
    expectBadRequest(await get(`/api/v1/${endpoint}?${query}`), parameter);
  });

  it('every problem in one answer', async () => {
    const r = await get('/api/v1/failing_logs?num=0&strict=maybe&foo=1');
    expectBadRequest(r);
    expect((r.body as { details: { parameter: string }[] }).details.map((d) => d.parameter).sort()).toEqual(['foo', 'num', 'strict']);
  });

  it('runs/{id}: the full report; 404 for none; 400 for a bad id', async () => {
    const s = seeded[0]!;
    const r = await get(`/api/v1/runs/${s.id}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: s.id, status: 'completed' });
    expect((await get('/api/v1/runs/999999')).status).toBe(404);
    expectBadRequest(await get('/api/v1/runs/abc'), 'id');
    expectBadRequest(await get(`/api/v1/runs/${s.id}?x=1`), 'x');
    const list = (await get('/api/v1/runs?num=100')).body as { id: number; status: string; createdAt: string }[];
    expect(list).toHaveLength(seeded.length);
    expect(list.filter((x) => x.status === 'error')).toHaveLength(2);
  });

  it('unknown paths are 404 and other methods 405, with the error body', async () => {
    const r = await get('/api/v1/nope');
    expect(r.status).toBe(404);
    expect(Object.keys(r.body as object).sort()).toEqual(['details', 'message']);
    const post = await fetch(`${base}/api/v1/logs`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('logs no request lines unless logRequests is true (the documented default)', async () => {
    const lines = async (logRequests: boolean | undefined) => {
      const chunks: string[] = [];
      const logged = await buildQualityApp({
        store,
        logger: { level: 'info', stream: { write: (s: string) => void chunks.push(s) } } as never,
        ...(logRequests === undefined ? {} : { logRequests }),
      });
      await logged.listen({ host: '127.0.0.1', port: 0 });
      const port = (logged.server.address() as { port: number }).port;
      for (const p of ['/api/v1/logs', '/nope', '/api/v1/logs?num=0']) await (await fetch(`http://127.0.0.1:${port}${p}`)).text();
      await logged.close();
      return chunks.map((c) => (JSON.parse(c) as { msg: string }).msg);
    };
    const quiet = await lines(undefined);
    expect(quiet).not.toContain('incoming request');
    expect(quiet).not.toContain('request completed');
    expect(await lines(false)).not.toContain('request completed');
    expect((await lines(true)).filter((m) => m === 'request completed')).toHaveLength(3);
  });

  it('CONNECT, a request without Host and unparsable bytes get a status and the JSON error body', async () => {
    const raw = (text: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(base).port), '127.0.0.1', () => socket.write(text));
        let data = '';
        socket.on('data', (d) => (data += d.toString('latin1')));
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
      });
    const cases: Array<[string, string, string]> = [
      ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 'HTTP/1.1 405 Method Not Allowed', 'method CONNECT not allowed: this server is not a proxy'],
      ['GET /api/v1/logs HTTP/1.1\r\n\r\n', 'HTTP/1.1 400 Bad Request', 'request has no Host header'],
      ['THIS IS NOT HTTP\r\n\r\n', 'HTTP/1.1 400 Bad Request', 'malformed HTTP request'],
    ];
    for (const [request, statusLine, message] of cases) {
      const answer = await raw(request);
      const [head, body] = answer.split('\r\n\r\n', 2);
      expect(head!.split('\r\n', 1)[0], request).toBe(statusLine);
      expect((JSON.parse(body!) as { message: string }).message).toBe(message);
    }
  });

  it('a large streamed response is complete and well-formed (3 x 5,242,880 bits)', async () => {
    const res = await fetch(`${base}/api/v1/failing_random?num=3&randsize=${KEPT_BITS}`);
    expect(res.status).toBe(200);
    const body = JSON.parse(await res.text()) as { random: string }[];
    const want = newest(strict).slice(0, 3);
    expect(body).toHaveLength(want.length);
    for (const [i, rec] of body.entries()) expect(textToBits(rec.random).equals(want[i]!.data!)).toBe(true);
  });

  it('storage down: 503 with Retry-After and the error body', async () => {
    const broken = await engine.open();
    const brokenStore = await QualityStore.open(broken);
    await broken.close();
    const downApp = await buildQualityApp({ store: brokenStore, logger: false });
    try {
      for (const path of ['/api/v1/logs', '/api/v1/failing_logs?include_random=true', '/api/v1/failing_random', '/api/v1/runs/1']) {
        const r = await downApp.inject({ method: 'GET', url: path });
        expect(r.statusCode).toBe(503);
        expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
        expect(Object.keys(r.json() as object).sort()).toEqual(['details', 'message']);
      }
      // A client mistake is still a 400, not a 5xx.
      expect((await downApp.inject({ method: 'GET', url: '/api/v1/logs?num=0' })).statusCode).toBe(400);
    } finally {
      await downApp.close();
    }
  });
});

/** The first n bits of `data` as '0'/'1', computed here bit by bit (independent of the native code). */
function expectedBits(data: Buffer, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += (data[i >> 3]! >> (7 - (i & 7))) & 1 ? '1' : '0';
  return s;
}

describe('bitsToText (native)', () => {
  it('expands MSB first and stops at the requested bit', () => {
    const data = crypto.randomBytes(4099);
    for (const n of [0, 1, 7, 8, 9, 4099 * 8 - 1, 4099 * 8]) expect(bitsToText(data, n).toString('latin1')).toBe(expectedBits(data, n));
    expect(() => bitsToText(data, 4099 * 8 + 1)).toThrow(RangeError);
  });
});
