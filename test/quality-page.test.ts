// The quality page's server side over real storage (SQLite, and PostgreSQL when
// QENTROPY_PG_URL is set), on runs made by the battery: the page and its assets under a
// strict CSP, the data endpoints (and their 400s), the kept bits download, the event
// stream (new runs, replay after a reconnect), NIST's acceptance band, min-entropy when a
// run carries it, and the CLI's --html refusing an unwritable path.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import pino from 'pino';
import { request } from 'undici';

import { main } from '../src/cli/main.js';
import { buildQualityApp } from '../src/quality/api.js';
import { chooseCoding } from '../src/quality/compression.js';
import { KEPT_BITS, QualityStore } from '../src/quality/store.js';
import { acceptanceBand, buildRunView, PAGE_CSP, registerQualityPage, renderHtmlReport, type RunViewInput } from '../src/quality-page/index.js';
import { QualityRole } from '../src/roles/quality.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import { describeEachEngine } from './helpers/databases.js';
import { copyRun, seedRun, sourceFor } from './helpers/quality-seed.js';

// Small batches keep this file quick; 60 sequences still let uniformity be judged.
const LAYOUT = { streams: 60, bitsPerStream: 100_000 };
const HOUR = 3_600_000;

describe('acceptance band', () => {
  it("is NIST's p̂ ± 3·sqrt(p̂(1−p̂)/m): 0.99 ± 0.0094392 for m = 1000 (SP 800-22 §4.2.1)", () => {
    const [lo, hi] = acceptanceBand(0.01, 1000);
    expect(lo).toBeCloseTo(0.99 - 0.0094392, 6);
    expect(hi).toBeCloseTo(0.99 + 0.0094392, 6);
  });
});

describe('content coding', () => {
  it('takes brotli, else gzip, as Accept-Encoding allows (q=0 refuses, * stands for the rest)', () => {
    expect(chooseCoding(undefined)).toBeUndefined();
    expect(chooseCoding('identity')).toBeUndefined();
    expect(chooseCoding('deflate')).toBeUndefined();
    expect(chooseCoding('gzip, deflate, br, zstd')).toBe('br');
    expect(chooseCoding('gzip')).toBe('gzip');
    expect(chooseCoding('br;q=0, gzip;q=0.5')).toBe('gzip');
    expect(chooseCoding('*')).toBe('br');
    expect(chooseCoding('*;q=0.5, br;q=0')).toBe('gzip');
    expect(chooseCoding('GZIP ; Q=1')).toBe('gzip');
  });
});

describeEachEngine('quality page server', (engine) => {
  let db: Db;
  let store: QualityStore;
  let app: FastifyInstance;
  let base: string;
  const ids: Record<'old' | 'pass' | 'fail' | 'error', number> = { old: 0, pass: 0, fail: 0, error: 0 };
  const now = Date.now();

  beforeAll(async () => {
    await engine.reset();
    db = await engine.open();
    store = await QualityStore.open(db);
    ids.old = await seedRun(store, 'pass', now - 30 * HOUR, LAYOUT);
    ids.fail = await seedRun(store, 'fail', now - 2 * HOUR, LAYOUT);
    ids.error = await seedRun(store, 'error', now - HOUR, LAYOUT);
    ids.pass = await seedRun(store, 'pass', now - 60_000, LAYOUT);
    app = await buildQualityApp({ store, logger: false });
    await registerQualityPage(app, { store, retentionDays: 7, watchIntervalMs: 100, heartbeatMs: 200 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  const get = (p: string, headers: Record<string, string> = {}) => fetch(`${base}${p}`, { headers });

  it('serves the page under a strict CSP and its assets with their types, revalidated by ETag', async () => {
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe(PAGE_CSP);
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/assets/app.js"></script>');
    expect(html).not.toMatch(/<script>|<style|style="|https?:\/\/(?!127)/);
    // Links open in a browser tab: no 5 MB of bits as JSON per run (issue 27).
    const sizes = [...html.matchAll(/randsize=(\d+)/g)].map((m) => Number(m[1]));
    expect(sizes.length).toBeGreaterThan(0);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(1024);
    for (const [name, type] of [['app.js', 'text/javascript'], ['view.js', 'text/javascript'], ['page.css', 'text/css'], ['icon.svg', 'image/svg+xml']]) {
      const r = await get(`/assets/${name}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toContain(type!);
      const again = await get(`/assets/${name}`, { 'if-none-match': r.headers.get('etag')! });
      expect(again.status).toBe(304);
    }
    const missing = await get('/assets/secret.txt');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ message: 'not found' });
  });

  it('answers HEAD wherever it answers GET: same status and headers, no body (issue 27)', async () => {
    const paths = [
      '/', '/assets/app.js', '/assets/page.css', '/page/v1/timeline', '/page/v1/runs/latest', `/page/v1/runs/${ids.fail}`,
      `/page/v1/runs/${ids.fail}/bits`, '/page/v1/failing', '/page/v1/events', `/runs/${ids.fail}/report.html`,
      '/api/v1/logs', '/api/v1/failing_logs', '/api/v1/failing_random?randsize=8', '/api/v1/runs', `/api/v1/runs/${ids.fail}`, '/metrics',
    ];
    for (const p of paths) {
      const controller = new AbortController();
      const got = await fetch(`${base}${p}`, { signal: controller.signal });
      controller.abort(); // the event stream stays open: its status and headers are enough
      const head = await fetch(`${base}${p}`, { method: 'HEAD' });
      expect(head.status, p).toBe(got.status);
      expect(head.status, p).toBe(200);
      expect(head.headers.get('content-type'), p).toBe(got.headers.get('content-type'));
      expect(await head.text(), p).toBe('');
    }
    const missing = await fetch(`${base}/page/v1/runs/999999`, { method: 'HEAD' });
    expect(missing.status).toBe(404);
  });

  it('answers a method a page route does not take with 405 and Allow, as the APIs do (issue 27)', async () => {
    for (const [method, p] of [['POST', '/'], ['POST', '/page/v1/timeline'], ['DELETE', `/page/v1/runs/${ids.fail}`], ['PUT', '/assets/app.js'], ['POST', '/page/v1/events'], ['POST', '/api/v1/logs'], ['DELETE', '/metrics']] as const) {
      const r = await fetch(`${base}${p}`, { method });
      expect(r.status, `${method} ${p}`).toBe(405);
      expect(r.headers.get('allow'), `${method} ${p}`).toBe('GET, HEAD');
      expect(await r.json()).toEqual({ message: `method ${method} not allowed`, details: [{ allow: ['GET', 'HEAD'] }] });
    }
    const unknown = await fetch(`${base}/page/v1/nope`, { method: 'POST' });
    expect(unknown.status).toBe(404);
  });

  it('compresses JSON, the page and its assets with brotli or gzip as the client asks, never raw bits (issue 27)', async () => {
    const raw = async (p: string, acceptEncoding?: string) => {
      const r = await request(`${base}${p}`, { headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} });
      return { status: r.statusCode, headers: r.headers, body: Buffer.from(await r.body.arrayBuffer()) };
    };
    const paths = ['/', '/assets/view.js', '/assets/page.css', '/page/v1/timeline?hours=48', `/page/v1/runs/${ids.fail}`, `/runs/${ids.fail}/report.html`, `/api/v1/runs/${ids.fail}`, `/api/v1/failing_random?randsize=5242880`];
    for (const p of paths) {
      const plain = await raw(p);
      expect(plain.headers['content-encoding'], p).toBeUndefined();
      const br = await raw(p, 'gzip, deflate, br');
      expect(br.headers['content-encoding'], p).toBe('br');
      expect(br.headers.vary, p).toContain('accept-encoding');
      // (The timeline's "now" and the report's "Written by qentropy on <second>" move between two requests.)
      const moving = (b: Buffer) => b.toString('latin1').replace(/"now":\d+/, '').replace(/Written by qentropy on [\d :-]+ UTC/, '');
      const same = (a: Buffer) => moving(a) === moving(plain.body);
      expect(same(zlib.brotliDecompressSync(br.body)), p).toBe(true);
      expect(br.body.length, p).toBeLessThan(plain.body.length / 2);
      const gz = await raw(p, 'gzip;q=1, br;q=0');
      expect(gz.headers['content-encoding'], p).toBe('gzip');
      expect(same(zlib.gunzipSync(gz.body)), p).toBe(true);
    }
    const bits = await raw(`/page/v1/runs/${ids.fail}/bits`, 'gzip, br');
    expect(bits.headers['content-encoding']).toBeUndefined();
    // A compressed asset still revalidates: its weak ETag matches.
    const asset = await raw('/assets/view.js', 'br');
    const again = await request(`${base}/assets/view.js`, { headers: { 'accept-encoding': 'br', 'if-none-match': String(asset.headers.etag) } });
    await again.body.dump();
    expect(String(asset.headers.etag)).toMatch(/^W\//);
    expect(again.statusCode).toBe(304);
  });

  it('timeline: runs of the period, oldest first, errors included, with their criteria', async () => {
    const body = (await (await get('/page/v1/timeline')).json()) as { hours: number; retentionHours: number; runs: { id: number; status: string; nist: boolean | null; strict: boolean; nistRate: number | null }[] };
    expect(body.hours).toBe(24);
    expect(body.retentionHours).toBe(7 * 24);
    expect(body.runs.map((r) => r.id)).toEqual([ids.fail, ids.error, ids.pass]);
    const [fail, error, pass] = body.runs;
    expect(fail).toMatchObject({ status: 'completed', nist: false, strict: true });
    expect(error).toMatchObject({ status: 'error', nist: null, nistRate: null });
    const stored = (await store.getRunRow(ids.pass))!;
    expect(pass).toMatchObject({ status: 'completed', nist: stored.record!.nist_all_passed, uniformity: stored.record!.uniformity_all_passed, strict: stored.strictlyFailing });
    const longer = (await (await get('/page/v1/timeline?hours=48')).json()) as { runs: { id: number }[] };
    expect(longer.runs.map((r) => r.id)).toEqual([ids.old, ids.fail, ids.error, ids.pass]);
  });

  it('answers bad parameters with 400 {message, details}', async () => {
    const bad = [
      '/page/v1/timeline?hours=0',
      '/page/v1/timeline?hours=169',
      '/page/v1/timeline?hours=abc',
      '/page/v1/timeline?hours=1&hours=2',
      '/page/v1/timeline?days=1',
      '/page/v1/runs/abc',
      '/page/v1/runs/0',
      '/page/v1/runs/1?x=1',
      '/page/v1/runs/-1/bits',
      '/page/v1/failing?num=0',
      '/page/v1/failing?num=101',
      '/page/v1/events?after=-1',
      '/runs/x/report.html',
    ];
    for (const p of bad) {
      const r = await get(p);
      expect(r.status, p).toBe(400);
      expect(r.headers.get('content-type')).toContain('application/json');
      const body = (await r.json()) as { message: string; details: unknown[] };
      expect(body.message, p).toMatch(/invalid query parameter|must be/);
      expect(body.details.length, p).toBeGreaterThan(0);
    }
    for (const p of ['/page/v1/runs/999999', `/page/v1/runs/${ids.pass}/bits`, '/runs/999999/report.html']) {
      const r = await get(p);
      expect(r.status, p).toBe(404);
      expect(((await r.json()) as { message: string }).message).toMatch(/no quality run|kept no tested bits/);
    }
  });

  it('says which parameter is wrong where: a path id is a path parameter; a path taking no query says so (issue 27)', async () => {
    for (const p of ['/page/v1/runs/abc', '/api/v1/runs/0', '/runs/x/report.html']) {
      const body = (await (await get(p)).json()) as { message: string };
      expect(body.message, p).toBe('invalid path parameter id: must be a positive integer run id');
    }
    for (const p of [`/page/v1/runs/${ids.pass}?x=1`, `/api/v1/runs/${ids.pass}?x=1`]) {
      const body = (await (await get(p)).json()) as { message: string };
      expect(body.message, p).toBe('invalid query parameter x: unknown parameter (this path takes none)');
    }
  });

  it("serves a run folded to 15 tests with the battery's flags, and the latest one", async () => {
    const latest = (await (await get('/page/v1/runs/latest')).json()) as { id: number };
    expect(latest.id).toBe(ids.pass);
    const view = (await (await get(`/page/v1/runs/${ids.fail}`)).json()) as ReturnType<typeof buildRunView>;
    const report = (await store.getReport(ids.fail)) as unknown as RunViewInput & { subTests: NonNullable<RunViewInput['subTests']> };
    expect(view.tests).toHaveLength(15);
    expect(view.subTests).toHaveLength(report.subTests.length);
    const nonOverlapping = view.tests.find((t) => t.test === 'non_overlapping_template')!;
    expect(nonOverlapping.subTests).toBe(148);
    expect(nonOverlapping.histogram.reduce((a, b) => a + b, 0)).toBe(
      report.subTests.filter((st) => st.test === 'non_overlapping_template').reduce((a, st) => a + st.histogram.reduce((x, y) => x + y, 0), 0),
    );
    expect(nonOverlapping.outside).toEqual(report.subTests.filter((st) => st.test === 'non_overlapping_template').map((st) => st.sampleSize > 0 && !st.proportionOk));
    expect(view.criteria?.strictly_failing).toBe(true);
    // Every run now carries the SP 800-90B assessment of its bytes (issue 15): the page shows it.
    const stored = (report as unknown as { min_entropy: { h_original: number; h_bitstring: number; assessed: number } }).min_entropy;
    expect(view.minEntropy).toEqual({ assessed: stored.assessed, original: stored.h_original, bitstring: stored.h_bitstring });
  });

  it('failing list and the kept bits of a failing run, byte for byte', async () => {
    const failing = (await (await get('/page/v1/failing')).json()) as { runs: { id: number; keptBits: number }[] };
    // Newest first; at 60 x 10^5 bits a good run may fail one criterion too (the battery says which).
    const loose = [];
    for (const id of [ids.pass, ids.error, ids.fail, ids.old]) if ((await store.getRunRow(id))!.looselyFailing) loose.push(id);
    expect(loose).toContain(ids.fail);
    expect(failing.runs.map((r) => r.id)).toEqual(loose);
    const kept = failing.runs.find((r) => r.id === ids.fail)!.keptBits;
    expect(kept).toBe(Math.min(KEPT_BITS, LAYOUT.streams * LAYOUT.bitsPerStream));
    const r = await get(`/page/v1/runs/${ids.fail}/bits`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-disposition')).toBe(`attachment; filename="qentropy-run-${ids.fail}.bin"`);
    const body = Buffer.from(await r.arrayBuffer());
    expect(body.equals(await store.readData(ids.fail, 0, kept / 8))).toBe(true);
  });

  it('serves the HTML report of a run with its own CSP and no script', async () => {
    const r = await get(`/runs/${ids.fail}/report.html`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'/);
    const html = await r.text();
    expect(html).not.toMatch(/<script(?! type="application\/json")/);
    expect((html.match(/<article class="test-card/g) ?? []).length).toBe(15);
  });

  /** Reads server-sent events until `count` `run` events arrived. */
  async function readEvents(p: string, count: number, headers: Record<string, string> = {}, during?: () => Promise<unknown>): Promise<{ id: string; run: { id: number; status: string } }[]> {
    const controller = new AbortController();
    const r = await fetch(`${base}${p}`, { headers, signal: controller.signal });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = r.body!.getReader();
    const events: { id: string; run: { id: number; status: string } }[] = [];
    let text = '';
    const pending = during?.();
    try {
      while (events.length < count) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString('utf8');
        let end: number;
        while ((end = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const id = /^id: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (id && data && /^event: run$/m.test(block)) events.push({ id, run: JSON.parse(data) as { id: number; status: string } });
        }
      }
    } finally {
      controller.abort();
      await pending;
    }
    return events;
  }

  it('streams each new run as an event, and replays the runs after ?after= or Last-Event-ID', async () => {
    const replayed = await readEvents(`/page/v1/events?after=${ids.fail}`, 2);
    expect(replayed.map((e) => e.run.id)).toEqual([ids.error, ids.pass]);
    expect(replayed.map((e) => e.id)).toEqual([String(ids.error), String(ids.pass)]);

    let fresh = 0;
    const live = await readEvents(`/page/v1/events?after=${ids.pass}`, 1, {}, async () => {
      fresh = await seedRun(store, 'error', Date.now(), LAYOUT);
    });
    expect(live.map((e) => e.run)).toEqual([expect.objectContaining({ id: fresh, status: 'error' })]);

    const resumed = await readEvents('/page/v1/events', 1, { 'last-event-id': String(ids.pass) });
    expect(resumed.map((e) => e.run.id)).toEqual([fresh]);
  });
});

describe('timeline of a long period', () => {
  it('groups runs beyond what the chart width can show, each group its worst run, a failing run never hidden (issue 27)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-groups-'));
    const db = await openDatabase({ url: `sqlite:${path.join(dir, 'q.db')}` });
    const store = await QualityStore.open(db);
    const app = await buildQualityApp({ store, logger: false });
    try {
      const now = Date.now();
      const pass = await seedRun(store, 'pass', now - 23 * HOUR, LAYOUT);
      const ids = [pass];
      for (let i = 1; i < 600; i++) ids.push(await copyRun(store, pass, now - 23 * HOUR + i * 120_000));
      const fail = await seedRun(store, 'fail', now - 10 * HOUR + 1000, LAYOUT);
      await registerQualityPage(app, { store });
      const whole = await app.inject({ url: '/page/v1/timeline' });
      const grouped = await app.inject({ url: '/page/v1/timeline?width=300' });
      const body = grouped.json() as { runCount: number; runs: { id: number; group: number; strict: boolean }[] };
      expect(body.runCount).toBe(601);
      expect(body.runs.length).toBeLessThanOrEqual(100);
      expect(body.runs.reduce((n, r) => n + r.group, 0)).toBe(601);
      expect(body.runs.find((r) => r.id === fail)).toMatchObject({ strict: true });
      for (const r of body.runs) expect([...ids, fail]).toContain(r.id);
      expect(grouped.body.length).toBeLessThan(whole.body.length / 4);
      // A width that shows them all: every run, each a group of one.
      const all = (await app.inject({ url: '/page/v1/timeline?width=4000' })).json() as { runs: { group: number }[] };
      expect(all.runs).toHaveLength(601);
      expect((await app.inject({ url: '/page/v1/timeline?width=-1' })).statusCode).toBe(400);

      // Zoomed into two hours (the page's brush): that span's runs only, fine enough to show
      // each run again at the same width, the failing one among them.
      const from = now - 11 * HOUR;
      const to = now - 9 * HOUR;
      const zoomed = (await app.inject({ url: `/page/v1/timeline?width=300&from=${from}&to=${to}` })).json() as {
        zoom: { from: number; to: number };
        runCount: number;
        runs: { id: number; time: number; group: number }[];
      };
      expect(zoomed.zoom).toEqual({ from, to });
      expect(zoomed.runCount).toBe(62); // 61 two-minute runs (both ends count) and the failing one
      expect(zoomed.runs.every((r) => r.group === 1 && r.time >= from && r.time <= to)).toBe(true);
      expect(zoomed.runs.map((r) => r.id)).toContain(fail);
      // Half a span is a client mistake: a 400 naming it, not the whole period.
      const half = await app.inject({ url: `/page/v1/timeline?from=${from}` });
      expect(half.statusCode).toBe(400);
      expect(half.json()).toMatchObject({ message: expect.stringContaining('from and to come together'), details: [expect.objectContaining({ parameter: 'to' })] });
      expect((await app.inject({ url: `/page/v1/timeline?from=${from}&to=${from + 1000}` })).statusCode).toBe(400);
    } finally {
      await app.close();
      await db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('run view and report files', () => {
  const input = (extra: Partial<RunViewInput>): RunViewInput => ({
    id: 7,
    status: 'completed',
    source: 'test',
    layout: { streams: 1, bitsPerStream: 8 },
    criteria: {
      tests_passed: true, nist_all_passed: true, nist_fails: 0, nist_passes: 1, nist_success_rate: 1, nist_min_pass_proportion: 0.9,
      uniformity_all_passed: false, uniformity_fails: 0, uniformity_passes: 0, uniformity_excluded: 1, uniformity_success_rate: null,
      strictly_failing: false, loosely_failing: true,
    },
    subTests: [],
    ...extra,
  });

  it('shows min-entropy when a run carries it (issue 15), and nothing when not', async () => {
    const withIt = buildRunView(input({ min_entropy: { h_original: 7.91, h_bitstring: 0.99, h_assessed: 7.9 } }));
    expect(withIt.minEntropy).toEqual({ assessed: 7.9, original: 7.91, bitstring: 0.99 });
    const html = await renderHtmlReport(withIt);
    expect(html).toMatch(/Min-entropy \(SP 800-90B\)<\/dt><dd><strong>7\.900000<\/strong> bits per byte assessed, H_original 7\.910000, H_bitstring 0\.990000 per bit/);
    const without = await renderHtmlReport(buildRunView(input({})));
    expect(without).not.toContain('Min-entropy');
    expect(buildRunView(input({ min_entropy: 'unknown' })).minEntropy).toBeNull();
  });

  it('--html to a path that cannot be written: one line, non-zero exit, nothing left behind', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-html-'));
    try {
      const bits = path.join(dir, 'bits.bin');
      fs.writeFileSync(bits, Buffer.alloc(1250, 0x5a));
      const errors: string[] = [];
      const write = process.stderr.write.bind(process.stderr);
      const out = process.stdout.write.bind(process.stdout);
      process.stderr.write = ((chunk: string) => errors.push(String(chunk)) > 0) as typeof process.stderr.write;
      process.stdout.write = (() => true) as typeof process.stdout.write;
      let code: number;
      try {
        code = await main(['sts', bits, '--tests', 'frequency', '--no-progress', '--html', path.join(dir, 'missing', 'report.html')]);
      } finally {
        process.stderr.write = write;
        process.stdout.write = out;
      }
      expect(code).toBe(1);
      expect(errors).toEqual([`qentropy: --html: cannot write ${path.join(dir, 'missing', 'report.html')}: ENOENT\n`]);
      expect(fs.readdirSync(dir)).toEqual(['bits.bin']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('quality role', () => {
  it("serves the page at / beside the APIs, and streams its own scheduler's runs to it", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-role-'));
    const role = new QualityRole(
      {
        enabled: true,
        listen: { host: '127.0.0.1', port: 0 },
        plainHttp: true,
        intervalSeconds: 3600,
        firstRunDelaySeconds: 3600,
        ...LAYOUT,
        threads: 1,
        source: 'pool',
        drawTimeoutSeconds: 60,
        retentionDays: 30,
        passingDataRetentionDays: 0,
        pruneIntervalSeconds: 3600,
        logRequests: false,
        storageUrl: `sqlite:${path.join(dir, 'q.db')}`,
      },
      { logger: pino({ level: 'silent' }), stateDir: dir },
      { source: sourceFor('pass') },
    );
    await role.start();
    const controller = new AbortController();
    try {
      const url = role.address!.url;
      const page = await fetch(`${url}/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toBe(PAGE_CSP);
      const timeline = (await (await fetch(`${url}/page/v1/timeline?hours=720`)).json()) as { runs: unknown[]; schedule: { intervalSeconds: number; drawTimeoutSeconds: number; nextRunAt: number } };
      expect(timeline.runs).toEqual([]);
      // The page says when the first run is due (firstRunDelaySeconds: 3600), not "about a minute".
      expect(timeline.schedule).toMatchObject({ intervalSeconds: 3600, drawTimeoutSeconds: 60 });
      expect(timeline.schedule.nextRunAt).toBeGreaterThan(Date.now() + 3_000_000);
      expect((await fetch(`${url}/page/v1/runs/latest`)).status).toBe(204);
      expect((await fetch(`${url}/page/v1/timeline?hours=721`)).status).toBe(400);

      const events = await fetch(`${url}/page/v1/events`, { signal: controller.signal });
      const reader = events.body!.getReader();
      await reader.read(); // "retry:": every run stored from here on reaches this stream
      const outcome = await role.service!.runNow();
      let text = '';
      while (!text.includes('event: run')) text += Buffer.from((await reader.read()).value!).toString('utf8');
      expect(text).toContain(`id: ${outcome.id}\n`);
    } finally {
      controller.abort();
      await role.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
