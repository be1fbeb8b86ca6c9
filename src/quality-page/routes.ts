// The quality page on the quality role's listener, beside the APIs (no token, same store):
//   GET /                          the page (index.html), strict CSP
//   GET /assets/{file}             its script, styles and icon
//   GET /page/v1/timeline?hours=   runs of the last H hours (1 .. retention), oldest first, and the schedule;
//                                  with from= and to= (ms), only that span of the period (the page's zoom)
//   GET /page/v1/runs/{id|latest}  one run folded for the page (view-model.ts); latest: 204 when none
//   GET /page/v1/runs/{id}/bits    the run's kept tested bits, raw (for `qentropy sts`)
//   GET /page/v1/failing?num=      the newest runs that failed a criterion
//   GET /page/v1/events?after=     server-sent events: one `run` event per new run (event-stream.ts)
//   GET /runs/{id}/report.html     the run as the self-contained HTML report
// Bad parameters throw QueryError: the app's error handler answers 400 {message, details}.
import { Readable } from 'node:stream';

import type { FastifyInstance, FastifyReply } from 'fastify';

import { parseQuery, parseRunId, QueryError } from '../quality/query.js';
import type { QualityStore } from '../quality/store.js';
import { loadAssets, SERVED, type Asset } from './assets.js';
import { renderHtmlReport, reportCsp } from './html-report.js';
import { registerEventStream, type EventStreamOptions } from './event-stream.js';
import { groupTimeline } from './timeline-groups.js';
import { buildRunView, timelineRun, type RunView, type RunViewInput } from './view-model.js';

export interface QualityPageOptions {
  store: QualityStore;
  /** How long records are kept: the longest period the timeline offers (default 90 days). */
  retentionDays?: number;
  /** How often new runs are looked for while a page listens (default 2 s). */
  watchIntervalMs?: number;
  /** Comment lines that keep idle event streams open through proxies (default 25 s). */
  heartbeatMs?: number;
  /** Caps on event streams (total, per client address) and their lifetime (event-stream.ts). */
  events?: Pick<EventStreamOptions, 'maxStreams' | 'maxStreamsPerClient' | 'lifetimeMs'>;
  /** The schedule of the runs, when a scheduler feeds this store (the daemon's role). */
  schedule?: () => PageSchedule;
}

/** What the page needs to say when the next run is due and when a verdict is stale. */
export interface PageSchedule {
  intervalSeconds: number;
  drawTimeoutSeconds: number;
  /** Ms since the epoch; null while the scheduler is stopped. */
  nextRunAt: number | null;
}

/** No inline script or style, no eval, nothing from another origin. */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Most runs one timeline answer carries: 90 days of 10-minute runs, with room. */
const TIMELINE_LIMIT = 20_000;
const CHUNK = 64 * 1024;

/** The narrowest span the page zooms into: a brush narrower than this is a click. */
const MIN_ZOOM_MS = 60_000;

/** `from`/`to` as a zoomed span, undefined when neither is given; 400 when only one is or they make no span. */
function zoomSpan(from: number, to: number): { from: number; to: number } | undefined {
  if (from === 0 && to === 0) return undefined;
  if (from === 0 || to === 0 || to - from < MIN_ZOOM_MS) {
    throw new QueryError([{ parameter: 'to', problem: `from and to come together, to at least ${MIN_ZOOM_MS} ms after from`, value: `from=${from}&to=${to}` }]);
  }
  return { from, to };
}

function notFound(reply: FastifyReply, id: number): FastifyReply {
  return reply.code(404).type('application/json; charset=utf-8').send({ message: `no quality run ${id}`, details: [{ id }] });
}

export async function registerQualityPage(app: FastifyInstance, options: QualityPageOptions): Promise<void> {
  const { store } = options;
  const retentionHours = Math.max(1, Math.round((options.retentionDays ?? 90) * 24));
  // A package without the page's files (e.g. bundled without them) still serves the APIs.
  let assets: Map<string, Asset> | undefined;
  let missing = '';
  try {
    assets = loadAssets();
  } catch (err) {
    missing = (err as Error).message;
    app.log.error({ err: missing }, 'quality page unavailable; the APIs are served');
  }
  function unavailable(reply: FastifyReply): FastifyReply {
    return reply.code(503).type('application/json; charset=utf-8').send({ message: 'the quality page is not available', details: [{ problem: missing }] });
  }

  function sendAsset(name: string, reply: FastifyReply, ifNoneMatch: string | undefined): FastifyReply {
    if (!assets) return unavailable(reply);
    const asset = assets.get(name)!;
    reply.header('etag', asset.etag).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff');
    if (name.endsWith('.html')) reply.header('content-security-policy', PAGE_CSP).header('referrer-policy', 'no-referrer');
    // Weak comparison (RFC 9110 §13.1.2): a compressed copy carries the weak form W/"...".
    if (ifNoneMatch === asset.etag || ifNoneMatch === `W/${asset.etag}`) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  }

  app.get('/', async (request, reply) => {
    return sendAsset('index.html', reply, request.headers['if-none-match']);
  });

  app.get<{ Params: { name: string } }>('/assets/:name', async (request, reply) => {
    const name = request.params.name;
    if (!(SERVED as readonly string[]).includes(name) || name === 'index.html') {
      return reply.code(404).type('application/json; charset=utf-8').send({ message: 'not found', details: [{ path: `/assets/${name.slice(0, 64)}` }] });
    }
    return sendAsset(name, reply, request.headers['if-none-match']);
  });

  app.get('/page/v1/timeline', async (request) => {
    const q = parseQuery(request.query, {
      hours: { kind: 'int', min: 1, max: retentionHours, fallback: Math.min(24, retentionHours) },
      // The chart's width in pixels: beyond what it can show, runs come grouped (0: never).
      width: { kind: 'int', min: 0, max: 16_384, fallback: 0 },
      // A zoomed span (ms since the epoch), 0 when not zoomed: clipped to the period.
      from: { kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 },
      to: { kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 },
    });
    const now = Date.now();
    const zoom = zoomSpan(q.from, q.to);
    const periodStart = now - q.hours * 3_600_000;
    const sinceMs = zoom ? Math.max(periodStart, zoom.from) : periodStart;
    const untilMs = zoom ? zoom.to : now;
    const rows = await store.listRunRows({ sinceMs, untilMs, limit: TIMELINE_LIMIT });
    const runs = rows.map(timelineRun);
    // firstRunAt: the page fits a service younger than the period to its runs.
    const firstRunAt = (await store.firstRunMs()) ?? null;
    return {
      now,
      hours: q.hours,
      retentionHours,
      firstRunAt,
      schedule: options.schedule?.() ?? null,
      runCount: runs.length,
      zoom: zoom ?? null,
      runs: q.width > 0 ? groupTimeline(runs, Math.max(sinceMs, firstRunAt ?? sinceMs), Math.min(untilMs, now), q.width) : runs,
    };
  });

  async function runView(id: number): Promise<RunView | undefined> {
    const report = await store.getReport(id);
    return report ? buildRunView({ id, ...(report as RunViewInput) }) : undefined;
  }

  app.get<{ Params: { id: string } }>('/page/v1/runs/:id', async (request, reply) => {
    parseQuery(request.query, {});
    const latest = request.params.id === 'latest' ? await store.latestRunId() : undefined;
    // No run yet is the normal state of a new service, not an error: 204, no body.
    if (request.params.id === 'latest' && latest === undefined) return reply.code(204).send();
    const id = latest ?? parseRunId(request.params.id);
    const view = await runView(id);
    return view ?? notFound(reply, id);
  });

  app.get<{ Params: { id: string } }>('/page/v1/runs/:id/bits', async (request, reply) => {
    parseQuery(request.query, {});
    const id = parseRunId(request.params.id);
    const row = await store.getRunRow(id);
    if (!row) return notFound(reply, id);
    if (row.dataBits === 0) {
      return reply.code(404).type('application/json; charset=utf-8').send({ message: `run ${id} kept no tested bits`, details: [{ id }] });
    }
    const bytes = Math.ceil(row.dataBits / 8);
    async function* pieces(): AsyncGenerator<Buffer> {
      for (let offset = 0; offset < bytes; offset += CHUNK) {
        const piece = await store.readData(id, offset, Math.min(CHUNK, bytes - offset));
        if (piece.length === 0) return;
        yield piece;
      }
    }
    return reply
      .type('application/octet-stream')
      .header('content-disposition', `attachment; filename="qentropy-run-${id}.bin"`)
      .header('x-content-type-options', 'nosniff')
      .send(Readable.from(pieces()));
  });

  app.get('/page/v1/failing', async (request) => {
    const q = parseQuery(request.query, { num: { kind: 'int', min: 1, max: 100, fallback: 20 } });
    const rows = await store.listRunRows({ failing: true, limit: q.num });
    return { runs: rows.reverse().map(timelineRun) };
  });

  app.get<{ Params: { id: string } }>('/runs/:id/report.html', async (request, reply) => {
    parseQuery(request.query, {});
    const id = parseRunId(request.params.id);
    const view = await runView(id);
    if (!view) return notFound(reply, id);
    if (!assets) return unavailable(reply);
    return reply
      .type('text/html; charset=utf-8')
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', `${reportCsp()}; frame-ancestors 'none'`)
      .send(await renderHtmlReport(view));
  });

  registerEventStream(app, store, { watchIntervalMs: options.watchIntervalMs, heartbeatMs: options.heartbeatMs, ...options.events });
}
