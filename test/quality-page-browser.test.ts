// The quality page in a real browser (Debian's chromium through playwright-core), over a
// day of runs made by really running the battery (test/helpers/quality-seed.ts): it loads
// without a console error or CSP violation and under 200 kB, draws one timeline mark per
// run and the 15 histograms at the battery's counts, shows a failing run's flagged tests
// (chosen by mouse or keyboard), takes a new run without a reload, and the HTML reports
// open from file:// with the network off. Screenshots go to test-output/quality-page/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import type { FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { main } from '../src/cli/main.js';
import { buildQualityApp } from '../src/quality/api.js';
import { QualityStore } from '../src/quality/store.js';
import { PAGE_CSP, registerQualityPage } from '../src/quality-page/index.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import type { SubTestSummary, TestName } from '../src/sts/types.js';
import { prfBytes } from './helpers/bit-patterns.js';
import { launchBrowser, testOutputDir, type Browser } from './helpers/browser.js';
import { copyRun, fillDay, seedRun, type SeededDay } from './helpers/quality-seed.js';

const FIRST_PAINT_BUDGET = 200_000;

interface Watched {
  page: Page;
  problems: string[];
  requests: string[];
  /** Bytes received so far (headers and bodies, as the network saw them). */
  transferred(): number;
}

const isFlagged = (st: SubTestSummary): boolean => (st.sampleSize > 0 && !st.proportionOk) || (st.uniformityAssessed && !st.uniformityOk);

describe('quality page in a real browser', () => {
  let dir: string;
  let db: Db;
  let store: QualityStore;
  let app: FastifyInstance;
  let base: string;
  let day: SeededDay;
  let browser: Browser;
  const shots = testOutputDir('quality-page');

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-page-'));
    db = await openDatabase({ url: `sqlite:${path.join(dir, 'quality.db')}` });
    store = await QualityStore.open(db);
    day = await fillDay(store, Date.now() - 120_000);
    app = await buildQualityApp({ store, logger: false });
    await registerQualityPage(app, { store, watchIntervalMs: 250 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    browser = await launchBrowser({ viewport: { width: 1280, height: 900 } });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await db?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A new tab that records console errors, uncaught errors, CSP violations, requests and bytes. */
  async function watchedPage(options: { uncompressed?: boolean; firstVisit?: boolean } = {}): Promise<Watched> {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => requests.push(r.url()));
    // (Strings, not functions: this file is compiled without the DOM's types.)
    await page.addInitScript(
      "document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));",
    );
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send('Network.enable');
    // To measure what compression saves: ask for every response as it is (identity).
    if (options.uncompressed) await cdp.send('Network.setExtraHTTPHeaders', { headers: { 'Accept-Encoding': 'identity' } });
    // A first visit: nothing from the cache another tab of this context filled.
    if (options.firstVisit) await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    let bytes = 0;
    cdp.on('Network.loadingFinished', (e) => {
      bytes += e.encodedDataLength;
    });
    return { page, problems, requests, transferred: () => bytes };
  }

  async function openLive(hash = '', options: { uncompressed?: boolean; firstVisit?: boolean } = {}): Promise<Watched> {
    const w = await watchedPage(options);
    await w.page.goto(`${base}/${hash}`);
    await w.page.waitForSelector('body[data-ready="true"]');
    return w;
  }

  async function storedReport(id: number): Promise<{ subTests: SubTestSummary[] }> {
    return (await store.getReport(id)) as unknown as { subTests: SubTestSummary[] };
  }

  it('loads with no console error and no CSP violation, under 200 kB with 144 runs', async () => {
    const response = await fetch(`${base}/`);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toBe(PAGE_CSP);
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);

    // The same first paint without compression (issue 27): what the page cost before it.
    const plain = await openLive('', { uncompressed: true, firstVisit: true });
    await plain.page.waitForLoadState('networkidle', { timeout: 5000 }).catch(() => undefined);
    const uncompressed = plain.transferred();
    await plain.page.close();

    const w = await openLive('', { firstVisit: true });
    await w.page.waitForLoadState('networkidle', { timeout: 5000 }).catch(() => undefined); // the event stream stays open
    const bytes = w.transferred();
    fs.writeFileSync(path.join(shots, 'first-paint.json'), `${JSON.stringify({ runs: day.ids.length, bytes, uncompressed, requests: w.requests }, null, 2)}\n`);
    console.log(`quality page first paint with ${day.ids.length} runs: ${bytes} bytes (${uncompressed} uncompressed) in ${w.requests.length} requests`);
    expect(bytes).toBeGreaterThan(10_000);
    expect(bytes).toBeLessThan(uncompressed / 2);
    expect(bytes).toBeLessThan(FIRST_PAINT_BUDGET);
    expect(w.requests.every((u) => u.startsWith(base))).toBe(true);
    expect(await w.page.locator('#now-body').innerText()).toContain(`Latest run ${day.real.pass}`);
    expect(w.problems).toEqual([]);
    await w.page.close();
  });

  it('draws one timeline mark per run, failing runs marked as such', async () => {
    const w = await openLive();
    const marks = await w.page.$$eval('#timeline-chart a.mark', (as) => as.map((a) => ({ id: Number(a.getAttribute('data-run-id')), verdict: a.getAttribute('data-verdict') })));
    expect(marks.map((m) => m.id)).toEqual(day.ids);
    const failing = marks.filter((m) => m.verdict === 'fail' || m.verdict === 'warn').map((m) => m.id);
    expect(failing).toEqual(day.failing);
    expect(marks.find((m) => m.id === day.real.error)!.verdict).toBe('error');
    expect(w.problems).toEqual([]);
    await w.page.close();
  });

  it("renders all 15 histograms with bar heights in proportion to the battery's counts", async () => {
    const w = await openLive();
    const cards = await w.page.$$eval('#selected-body article.test-card', (articles) =>
      articles.map((a) => ({
        test: a.getAttribute('data-test'),
        bars: [...a.querySelectorAll('svg.histogram rect.bar')].map((r) => ({
          count: Number(r.getAttribute('data-count')),
          height: (r as unknown as { getBBox(): { height: number } }).getBBox().height,
        })),
      })),
    );
    expect(cards).toHaveLength(15);
    const report = await storedReport(day.real.pass);
    for (const card of cards) {
      const subs = report.subTests.filter((st) => st.test === (card.test as TestName));
      const expected = Array.from({ length: 10 }, (_, i) => subs.reduce((sum, st) => sum + st.histogram[i]!, 0));
      expect(card.bars.map((b) => b.count)).toEqual(expected);
      const tallest = Math.max(...card.bars.map((b) => b.height));
      const most = Math.max(...expected);
      for (const [i, bar] of card.bars.entries()) expect(bar.height / tallest).toBeCloseTo(expected[i]! / most, 3);
    }
    expect(w.problems).toEqual([]);
    await w.page.close();
  });

  it("selecting a failing run by mouse or keyboard shows its flagged tests and the repetition verdict", async () => {
    const w = await openLive();
    await w.page.click(`#timeline-chart a.mark[data-run-id="${day.real.fail}"]`);
    await w.page.waitForSelector(`#selected-body .summary h3:has-text("Run ${day.real.fail}:")`);
    const report = await storedReport(day.real.fail);
    const flagged = report.subTests.filter(isFlagged);
    expect(flagged.length).toBeGreaterThan(0);
    expect(await w.page.locator('#selected-body .flagged-list tbody tr').count()).toBe(flagged.length);
    const flaggedCards = await w.page.$$eval('#selected-body article.test-card.flagged', (as) => as.map((a) => a.getAttribute('data-test')));
    expect(flaggedCards.sort()).toEqual([...new Set(flagged.map((st) => st.test))].sort());
    expect(await w.page.locator('#selected-body .summary').getAttribute('data-verdict')).toBe('fail');
    expect(w.page.url()).toContain(`#run=${day.real.fail}`);

    // Keyboard (issue 27): the timeline is one Tab stop, on the selected run; arrow keys move
    // between runs, Home and End to the ends, Enter selects; the next Tab leaves the timeline.
    expect(await w.page.locator('#timeline-chart a.mark[tabindex="0"]').count()).toBe(1);
    await w.page.focus('#range');
    await w.page.keyboard.press('Tab');
    const focused = () => w.page.evaluate("document.activeElement.getAttribute('data-run-id')");
    expect(await focused()).toBe(String(day.real.fail));
    const at = day.ids.indexOf(day.real.fail);
    await w.page.keyboard.press('ArrowRight');
    expect(await focused()).toBe(String(day.ids[at + 1]));
    await w.page.keyboard.press('ArrowLeft');
    await w.page.keyboard.press('ArrowLeft');
    expect(await focused()).toBe(String(day.ids[at - 1]));
    await w.page.keyboard.press('Home');
    expect(await focused()).toBe(String(day.ids[0]));
    await w.page.keyboard.press('End');
    expect(await focused()).toBe(String(day.ids[day.ids.length - 1]));
    await w.page.keyboard.press('Tab');
    expect(await focused()).toBeNull();
    // Walk to the repeating run with the arrows and select it with Enter.
    await w.page.focus(`#timeline-chart a.mark[data-run-id="${day.ids[0]}"]`);
    for (let i = 0; i < day.ids.indexOf(day.real.repeat); i++) await w.page.keyboard.press('ArrowRight');
    expect(await focused()).toBe(String(day.real.repeat));
    await w.page.keyboard.press('Enter');
    await w.page.waitForSelector(`#selected-body .summary h3:has-text("Run ${day.real.repeat}:")`);
    expect(await w.page.locator('#selected-body dl.facts').innerText()).toMatch(/Repetition detector\s+✗ flagged\s+\d+ sequence\(s\) repeat an earlier one/);
    // The buttons step through the runs and back to following the newest.
    const before = day.ids[day.ids.indexOf(day.real.repeat) - 1]!;
    await w.page.click('#prev-run');
    await w.page.waitForSelector(`#selected-body .summary h3:has-text("Run ${before}:")`);
    await w.page.click('#follow-latest');
    await w.page.waitForSelector(`#selected-body .summary h3:has-text("Run ${day.real.pass}:")`);
    expect(w.problems).toEqual([]);
    await w.page.close();
  });

  it('zooms into a span dragged across the timeline, and back out with Escape or "Reset zoom" (issue 27)', async () => {
    const w = await openLive();
    // (Polls, not page.waitForFunction: a string evaluated in the page breaks its CSP.)
    const marks = () => w.page.$$eval('#timeline-chart a.mark', (as) => as.map((a) => Number(a.getAttribute('data-run-id'))));
    const markWidth = () => w.page.$eval('#timeline-chart a.mark rect.crit', (r) => Number(r.getAttribute('width')));
    const whole = await marks();
    const wholeWidth = await markWidth();
    expect(whole.length).toBeGreaterThanOrEqual(day.ids.length);
    expect(await w.page.locator('#reset-zoom').isVisible()).toBe(false);

    // Drag across runs 25..40 (the failing runs 30 and 31 among them), through the rate lines.
    const times = new Map(((await (await fetch(`${base}/page/v1/timeline?hours=24`)).json()) as { runs: { id: number; time: number }[] }).runs.map((r) => [r.id, r.time]));
    const inside = day.ids.slice(25, 41);
    async function drag(): Promise<void> {
      await w.page.locator('#timeline-chart').scrollIntoViewIfNeeded();
      const axis = await w.page.$eval('#timeline-chart svg', (s) => {
        const box = s.getBoundingClientRect();
        const d = (s as unknown as { dataset: Record<string, string> }).dataset;
        return { left: box.left, top: box.top, height: box.height, from: Number(d.from), to: Number(d.to), x0: Number(d.x0), x1: Number(d.x1) };
      });
      const xOf = (t: number): number => axis.left + axis.x0 + ((t - axis.from) / (axis.to - axis.from)) * (axis.x1 - axis.x0);
      const y = axis.top + axis.height / 2;
      await w.page.mouse.move(xOf(times.get(inside[0]!)! - 120_000), y);
      await w.page.mouse.down();
      await w.page.mouse.move(xOf(times.get(inside[0]!)!) + 20, y, { steps: 3 });
      await w.page.mouse.move(xOf(times.get(inside[inside.length - 1]!)! + 120_000), y, { steps: 5 });
      await w.page.mouse.up();
      await w.page.waitForSelector('#reset-zoom:not([hidden])', { timeout: 10_000 });
      await expect.poll(() => w.page.locator('#timeline-chart a.mark').count(), { timeout: 10_000 }).toBe(inside.length);
    }
    await drag();
    expect(await marks()).toEqual(inside);
    expect(await markWidth()).toBeGreaterThan(wholeWidth); // finer: each run has more room
    expect(await w.page.locator('#timeline-count').innerText()).toMatch(/^16 runs from .* UTC \(zoomed\)$/);
    expect(w.page.url()).toMatch(/#from=\d+&to=\d+$/); // the drag selected no run
    await w.page.locator('#timeline').screenshot({ path: path.join(shots, 'zoomed-timeline.png') });

    // Zoomed, clicks and the keyboard still select runs, and the URL keeps the zoom.
    await w.page.click(`#timeline-chart a.mark[data-run-id="${day.real.fail}"]`);
    await w.page.waitForSelector(`#selected-body .summary h3:has-text("Run ${day.real.fail}:")`);
    expect(w.page.url()).toMatch(new RegExp(`#run=${day.real.fail}&from=\\d+&to=\\d+$`));
    expect(await marks()).toEqual(inside);
    await w.page.focus(`#timeline-chart a.mark[data-run-id="${day.real.fail}"]`);
    await w.page.keyboard.press('ArrowRight');
    expect(await w.page.evaluate("document.activeElement.getAttribute('data-run-id')")).toBe(String(inside[inside.indexOf(day.real.fail) + 1]));

    // The zoomed URL opens zoomed.
    const shared = await openLive(new URL(w.page.url()).hash);
    expect(await shared.page.$$eval('#timeline-chart a.mark', (as) => as.length)).toBe(inside.length);
    expect(await shared.page.locator('#reset-zoom').isVisible()).toBe(true);
    await shared.page.close();

    // Escape shows the whole period again; so does "Reset zoom" after another drag.
    await w.page.keyboard.press('Escape');
    await w.page.waitForSelector('#reset-zoom[hidden]', { state: 'attached' });
    await expect.poll(() => w.page.locator('#timeline-chart a.mark').count(), { timeout: 10_000 }).toBe(whole.length);
    expect(await marks()).toEqual(whole);
    expect(w.page.url()).not.toContain('from=');
    await drag();
    await w.page.click('#reset-zoom');
    await expect.poll(() => w.page.locator('#timeline-chart a.mark').count(), { timeout: 10_000 }).toBe(whole.length);
    expect(await w.page.locator('#timeline-count').innerText()).not.toContain('zoomed');
    expect(w.problems).toEqual([]);
    await w.page.close();
  });

  it("a test found not uniform shows its failing sub-test's histogram, on a count axis (issue 27)", async () => {
    const w = await openLive(`#run=${day.real.fail}`);
    await w.page.waitForSelector(`#selected-body .summary h3:has-text("Run ${day.real.fail}:")`);
    const cards = await w.page.$$eval('#selected-body article.test-card', (articles) =>
      articles.map((a) => ({
        test: a.getAttribute('data-test'),
        subTest: a.querySelector('svg.histogram')!.getAttribute('data-sub-test'),
        counts: [...a.querySelectorAll('svg.histogram rect.bar')].map((r) => Number(r.getAttribute('data-count'))),
        axisMax: a.querySelector('svg.histogram text.count-max')?.textContent ?? null,
        caption: a.querySelectorAll('p.caption')[1]!.textContent ?? '',
      })),
    );
    const report = await storedReport(day.real.fail);
    let shownSubTests = 0;
    for (const card of cards) {
      const subs = report.subTests.filter((st) => st.test === (card.test as TestName));
      const judged = subs.filter((st) => st.uniformityP !== null);
      const failing = subs.length > 1 && judged.some((st) => st.uniformityAssessed && !st.uniformityOk);
      if (failing) {
        // The label "not uniform" and the bins shown are the same sub-test's.
        const worst = judged.reduce((a, b) => (b.uniformityP! < a.uniformityP! ? b : a));
        expect(card.counts, card.test!).toEqual(worst.histogram);
        expect(card.subTest, card.test!).toBe(worst.label);
        expect(card.caption, card.test!).toContain("the histogram above is that sub-test's");
        shownSubTests++;
      }
      expect(card.axisMax, card.test!).toBe(Math.max(1, ...card.counts).toLocaleString('en-US'));
    }
    expect(shownSubTests).toBeGreaterThan(0);
    expect(w.problems).toEqual([]);
    await w.page.close();
  });

  it('on a 390 px phone the flagged sub-tests show their verdict columns without scrolling (issue 27)', async () => {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/#run=${day.real.fail}`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForSelector(`#selected-body .summary h3:has-text("Run ${day.real.fail}:")`);
    const headers = await page.$$eval('#selected-body .flagged-list thead th', (ths) => ths.map((th) => th.textContent));
    expect(headers.slice(0, 3)).toEqual(['Sub-test', 'P-value of uniformity', 'Proportion']);
    await page.locator('#selected-body .flagged-list').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(shots, 'phone-390-flagged.png') });
    const cell = await page.locator('#selected-body .flagged-list tbody tr').first().locator('td').nth(1).boundingBox();
    expect(cell!.x + cell!.width).toBeLessThanOrEqual(390);
    await page.close();
  });

  it('marks a verdict stale once a run is overdue, and shows the latest tested verdict behind an error run (issue 27)', async () => {
    const staleDb = await openDatabase({ url: `sqlite:${path.join(dir, 'stale.db')}` });
    const staleStore = await QualityStore.open(staleDb);
    const now = Date.now();
    const layout = { streams: 60, bitsPerStream: 100_000 };
    const failId = await seedRun(staleStore, 'fail', now - 2 * 3_600_000, layout);
    const errorId = await seedRun(staleStore, 'error', now - 2 * 3_600_000 + 600_000, layout);
    const staleApp = await buildQualityApp({ store: staleStore, logger: false });
    // Runs every 10 minutes, the newest 1 h 50 min ago: overdue.
    await registerQualityPage(staleApp, { store: staleStore, schedule: () => ({ intervalSeconds: 600, drawTimeoutSeconds: 300, nextRunAt: now + 60_000 }) });
    await staleApp.listen({ host: '127.0.0.1', port: 0 });
    try {
      const address = staleApp.server.address();
      const w = await watchedPage();
      await w.page.goto(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`);
      await w.page.waitForSelector('body[data-ready="true"]');
      await w.page.waitForSelector('#now-body .contact[data-live="true"]');
      expect(await w.page.locator('#now-body').getAttribute('data-stale')).toBe('true');
      const text = await w.page.locator('#now-body').innerText();
      expect(text).toContain('Stale');
      expect(text).toContain('The verdict below may no longer hold');
      expect(text).toContain(`Latest run ${errorId}: ! Not tested`);
      expect(text).toContain(`Latest tested run ${failId}: ✗ Failed`);
      expect(text).toMatch(/Live: last heard from the service \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\. Next run due /);
      await w.page.locator('#now').screenshot({ path: path.join(shots, 'now-stale.png') });
      expect(w.problems).toEqual([]);
      await w.page.close();
    } finally {
      await staleApp.close();
      await staleDb.close();
    }
  }, 120_000);

  it('on a 390 px phone a click selects the run under the pointer, though runs are 2 px apart (issue 27)', async () => {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/`);
    await page.waitForSelector('body[data-ready="true"]');
    for (const id of [day.real.fail, day.real.repeat, day.real.error]) {
      await page.locator('#timeline-chart').scrollIntoViewIfNeeded(); // selecting scrolls to the run
      const mark = await page.locator(`#timeline-chart a.mark[data-run-id="${id}"] rect.crit`).first().boundingBox();
      await page.mouse.click(mark!.x + mark!.width / 2, mark!.y + mark!.height / 2);
      await page.waitForSelector(`#selected-body .summary h3:has-text("Run ${id}:")`);
      expect(page.url()).toContain(`#run=${id}`);
    }
    await page.close();
  });

  it('fits a service younger than the period to its runs, and offers 1 h and 6 h (issue 27)', async () => {
    const youngDb = await openDatabase({ url: `sqlite:${path.join(dir, 'young.db')}` });
    const youngStore = await QualityStore.open(youngDb);
    const now = Date.now();
    const layout = { streams: 60, bitsPerStream: 100_000 };
    const first = await seedRun(youngStore, 'pass', now - 50 * 60_000, layout);
    for (let i = 1; i <= 5; i++) await copyRun(youngStore, first, now - (50 - 10 * i) * 60_000);
    const youngApp = await buildQualityApp({ store: youngStore, logger: false });
    await registerQualityPage(youngApp, { store: youngStore });
    await youngApp.listen({ host: '127.0.0.1', port: 0 });
    try {
      const address = youngApp.server.address();
      const w = await watchedPage();
      await w.page.goto(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`);
      await w.page.waitForSelector('body[data-ready="true"]');
      const options = await w.page.$$eval('#range option', (os) => os.map((o) => o.textContent));
      expect(options.slice(0, 3)).toEqual(['1 hour', '6 hours', '24 hours']);
      // An hour of runs on the default 24 h range spreads over the chart, not into its last pixels.
      const xs = await w.page.$$eval('#timeline-chart a.mark rect.crit', (rs) => rs.map((r) => r.getBoundingClientRect().x));
      const chart = (await w.page.locator('#timeline-chart svg').boundingBox())!;
      expect(Math.min(...xs) - chart.x).toBeLessThan(chart.width * 0.25);
      expect(Math.max(...xs) - chart.x).toBeGreaterThan(chart.width * 0.75);
      expect(await w.page.locator('#timeline-count').innerText()).toMatch(/^6 runs since the first run, /);
      await w.page.locator('#timeline').screenshot({ path: path.join(shots, 'young-service.png') });
      expect(w.problems).toEqual([]);
      await w.page.close();
    } finally {
      await youngApp.close();
      await youngDb.close();
    }
  }, 120_000);

  it('shows a run completed while the page is open, without a reload', async () => {
    const w = await openLive();
    await w.page.evaluate('window.stayed = true');
    const id = await seedRun(store, 'fail', Date.now());
    await w.page.waitForSelector(`#timeline-chart a.mark[data-run-id="${id}"]`, { timeout: 20_000 });
    await w.page.waitForSelector(`#now-body h3:has-text("Latest run ${id}")`);
    expect(await w.page.locator('#now-body .summary').getAttribute('data-verdict')).toBe('fail');
    expect(await w.page.locator(`#failing-body tr[data-run-id="${id}"]`).count()).toBe(1);
    expect(await w.page.locator('#timeline-chart a.mark').count()).toBe(day.ids.length + 1);
    expect(await w.page.evaluate('window.stayed')).toBe(true);
    expect(w.problems).toEqual([]);
    await w.page.close();
  });

  it('is readable light, dark, at 360 px and on a 4K screen (screenshots)', async () => {
    const w = await openLive(`#run=${day.real.fail}`);
    await w.page.waitForSelector(`#selected-body .summary h3:has-text("Run ${day.real.fail}:")`);
    await w.page.screenshot({ path: path.join(shots, 'light.png') });
    await w.page.screenshot({ path: path.join(shots, 'light-full.png'), fullPage: true });
    // For docs/quality.md: the failing run's verdicts and first cards (bands, non-uniform histograms).
    const box = (await w.page.locator('#selected').boundingBox())!;
    await w.page.screenshot({ path: path.join(shots, 'selected-failing-run.png'), fullPage: true, clip: { x: box.x, y: box.y, width: box.width, height: Math.min(box.height, 1800) } });
    await w.page.emulateMedia({ colorScheme: 'dark' });
    expect(await w.page.evaluate('getComputedStyle(document.body).backgroundColor')).toBe('rgb(17, 20, 24)');
    await w.page.screenshot({ path: path.join(shots, 'dark.png') });
    await w.page.screenshot({ path: path.join(shots, 'dark-full.png'), fullPage: true });
    await w.page.emulateMedia({ colorScheme: 'light' });
    await w.page.setViewportSize({ width: 360, height: 780 });
    // The timeline redraws on resize (its svg replaced): wait for the narrow chart, not a time.
    // (0 while no chart is drawn.)
    const timelineWidth = () => w.page.$eval('#timeline-chart svg', (s) => s.getBoundingClientRect().width).catch(() => 0);
    await expect.poll(async () => { const width = await timelineWidth(); return width > 0 && width <= 360; }, { timeout: 10_000 }).toBe(true);
    expect(await w.page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
    await w.page.screenshot({ path: path.join(shots, 'narrow.png') });
    await w.page.screenshot({ path: path.join(shots, 'narrow-full.png'), fullPage: true });
    await w.page.locator('#timeline').screenshot({ path: path.join(shots, 'narrow-timeline.png') });
    await w.page.setViewportSize({ width: 3840, height: 2160 });
    await expect.poll(timelineWidth, { timeout: 10_000 }).toBeGreaterThan(2000);
    expect(await w.page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(3840);
    await w.page.screenshot({ path: path.join(shots, '4k.png') });
    expect(w.problems).toEqual([]);
    await w.page.close();
  });

  it('says so when no run is stored yet, and when the first one is due, without an error', async () => {
    const emptyDb = await openDatabase({ url: `sqlite:${path.join(dir, 'empty.db')}` });
    const emptyStore = await QualityStore.open(emptyDb);
    const empty = await buildQualityApp({ store: emptyStore, logger: false });
    // firstRunDelaySeconds: 600 (issue 27: the page said "takes about a minute").
    const firstRunAt = Date.now() + 600_000;
    await registerQualityPage(empty, { store: emptyStore, schedule: () => ({ intervalSeconds: 600, drawTimeoutSeconds: 300, nextRunAt: firstRunAt }) });
    await empty.listen({ host: '127.0.0.1', port: 0 });
    try {
      const address = empty.server.address();
      const w = await watchedPage();
      await w.page.goto(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`);
      await w.page.waitForSelector('body[data-ready="true"]');
      const text = await w.page.locator('#now-body').innerText();
      expect(text).toContain('No run is stored yet');
      expect(text).toContain(`The first run is due at ${new Date(firstRunAt).toISOString().slice(11, 16)} UTC (in about `);
      expect(text).toMatch(/in about (9|10) minutes/);
      expect(text).not.toContain('about a minute');
      expect(await w.page.locator('#timeline-chart a.mark').count()).toBe(0);
      expect(w.problems).toEqual([]);
      await w.page.close();
    } finally {
      await empty.close();
      await emptyDb.close();
    }
  });

  /** Opens an HTML file from disk with the network off; returns its 15 cards' bar counts. */
  async function openReportOffline(file: string, shot: string): Promise<{ tests: (string | null)[]; counts: number[][] }> {
    const w = await watchedPage();
    await browser.context.setOffline(true);
    try {
      await w.page.goto(pathToFileURL(file).href);
      await w.page.screenshot({ path: path.join(shots, shot), fullPage: true });
      const cards = await w.page.$$eval('article.test-card', (as) =>
        as.map((a) => ({ test: a.getAttribute('data-test'), counts: [...a.querySelectorAll('rect.bar')].map((r) => Number(r.getAttribute('data-count'))) })),
      );
      expect(w.requests).toEqual([pathToFileURL(file).href]);
      expect(w.problems).toEqual([]);
      return { tests: cards.map((c) => c.test), counts: cards.map((c) => c.counts) };
    } finally {
      await browser.context.setOffline(false);
      await w.page.close();
    }
  }

  it('writes HTML reports (quality report --html, sts --html) that open from file:// with the network off', async () => {
    const reportFile = path.join(dir, 'run.html');
    expect(await main(['quality', 'report', String(day.real.fail), '--storage', `sqlite:${path.join(dir, 'quality.db')}`, '--html', reportFile])).toBe(0);
    expect(fs.statSync(reportFile).mode & 0o777).toBe(0o600);
    const stored = await storedReport(day.real.fail);
    const fromRun = await openReportOffline(reportFile, 'report-run.png');
    expect(fromRun.tests).toHaveLength(15);
    for (const [i, test] of fromRun.tests.entries()) {
      const subs = stored.subTests.filter((st) => st.test === test);
      const failing = subs.length > 1 && subs.some((st) => st.uniformityAssessed && !st.uniformityOk);
      // A test found not uniform shows its failing sub-test's bins (issue 27), others the sum.
      const worst = failing ? subs.filter((st) => st.uniformityP !== null).reduce((a, b) => (b.uniformityP! < a.uniformityP! ? b : a)) : undefined;
      expect(fromRun.counts[i]).toEqual(worst ? worst.histogram : Array.from({ length: 10 }, (_, c) => subs.reduce((sum, st) => sum + st.histogram[c]!, 0)));
    }

    const bits = path.join(dir, 'bits.bin');
    fs.writeFileSync(bits, prfBytes(20 * 125_000, 'sts-html'));
    const stsFile = path.join(dir, 'sts.html');
    const print = process.stdout.write.bind(process.stdout);
    process.stdout.write = (() => true) as typeof process.stdout.write; // the text report, not needed here
    try {
      expect(await main(['sts', bits, '--streams', '20', '--no-progress', '--html', stsFile])).toBe(0);
    } finally {
      process.stdout.write = print;
    }
    const fromSts = await openReportOffline(stsFile, 'report-sts.png');
    expect(fromSts.tests).toHaveLength(15);
    // Every P-value of a test lands in one bin: 20 sequences x its sub-tests where applicable.
    expect(fromSts.counts[0]!.reduce((a, b) => a + b, 0)).toBe(20);
  });
});
