// The quality APIs (spec part B, product.md §5.3), no auth, on the quality role's own
// listener:
//   GET /api/v1/logs?num=&simple=
//   GET /api/v1/failing_logs?num=&simple=&strict=&include_random=&randsize=
//   GET /api/v1/failing_random?num=&randsize=
//   GET /api/v1/runs?num=          (beyond the spec: newest runs, errors included)
//   GET /api/v1/runs/{id}          (beyond the spec: the full per-run report)
//   GET /metrics                    (Prometheus: the newest run, its verdict and min-entropy, run counts)
// Responses that carry `random` are streamed: up to 100 records x 5,242,880 characters is
// about 500 MB of JSON, so the bits are read from storage in slices and expanded to text
// chunk by chunk (native), at the pace the client reads.
import { Readable } from 'node:stream';

import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import type { LoggerOptions } from 'pino';

import { answerClientError, createListener, type ListenerTls } from '../listener/index.js';
import { watchServer } from '../pqtls/index.js';
import { bitsToText } from './bitstring.js';
import { registerCompression } from './compression.js';
import { createQualityMetrics } from './metrics.js';
import { ENDPOINT_PARAMS, parseQuery, parseRunId, QueryError } from './query.js';
import { imfFixdate, simplify } from './record.js';
import { StorageUnavailableError, type ListedRun, type QualityStore } from './store.js';

export type QualityTlsSettings = ListenerTls;

export interface QualityAppOptions {
  store: QualityStore;
  tls?: QualityTlsSettings;
  /** pino options, or false for no logs. */
  logger?: LoggerOptions | false;
  /** Log one line per request (default false). */
  logRequests?: boolean;
  /** Retry-After on 503 (default 30 s). */
  retryAfterSeconds?: number;
  /** Bytes of stored bits read (and expanded) per step of a streamed response (default 64 KiB). */
  streamChunkBytes?: number;
  /** Connections served at once (`quality.listen.maxConnections`, default 512); more get 503. */
  maxConnections?: number;
  /** The schedule's interval, for /metrics (the role's `intervalSeconds`). */
  intervalSeconds?: number;
}

/** What a path served by GET also answers (RFC 9110 §9.3.2: HEAD wherever GET is). */
const ALLOWED_METHODS = ['GET', 'HEAD'];

/** `/api/v1/runs/:id` -> a RegExp matching the concrete paths of that route. */
function routePattern(url: string): RegExp {
  const parts = url.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${parts.join('/')}$`);
}

interface ErrorBody {
  message: string;
  details: unknown[];
}

function sendError(reply: FastifyReply, status: number, body: ErrorBody, retryAfter?: number): FastifyReply {
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

export async function buildQualityApp(options: QualityAppOptions): Promise<FastifyInstance> {
  const { store } = options;
  const retryAfter = options.retryAfterSeconds ?? 30;
  const chunkBytes = options.streamChunkBytes ?? 64 * 1024;
  const app = Fastify({
    logger: (options.logger === undefined ? { level: 'info' } : options.logger) as never,
    // Request lines only when asked for (default off, as for every role's listener).
    logController: new LogController({ disableRequestLogging: options.logRequests !== true }),
    bodyLimit: 1024,
    exposeHeadRoutes: true,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    serverFactory: (handler) =>
      createListener(handler, options.tls, options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
    clientErrorHandler: (error, socket) => answerClientError(error, socket),
    frameworkErrors: (error, _request, reply) => {
      void sendError(reply, 400, { message: 'malformed request', details: [{ problem: error.message.slice(0, 200) }] });
    },
  });
  if (options.tls) watchServer(app.server, { face: 'quality', log: app.log });
  registerCompression(app);

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof QueryError) return sendError(reply, 400, { message: error.message, details: error.details });
    if (error instanceof StorageUnavailableError) {
      request.log.error({ err: error.message }, 'quality storage unavailable');
      return sendError(reply, 503, { message: 'quality records are temporarily unavailable; retry later', details: [] }, retryAfter);
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return sendError(reply, status, { message: error.message.split('\n', 1)[0]!.slice(0, 200), details: error.code ? [{ code: error.code }] : [] });
    }
    request.log.error({ err: error }, 'request failed');
    return sendError(reply, 500, { message: 'internal server error', details: [] });
  });

  // Every GET route, the APIs' and the page's (registered later on this app), so that
  // another method on one of its paths is a 405 naming what is allowed, not a 404.
  const getRoutes: RegExp[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.includes('GET')) getRoutes.push(routePattern(route.url));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0]!;
    if (getRoutes.some((pattern) => pattern.test(path))) {
      reply.header('allow', ALLOWED_METHODS.join(', '));
      return sendError(reply, 405, { message: `method ${request.method} not allowed`, details: [{ allow: ALLOWED_METHODS }] });
    }
    return sendError(reply, 404, { message: 'not found', details: [{ path: path.slice(0, 200) }] });
  });

  app.get('/api/v1/logs', async (request, reply) => {
    const q = parseQuery(request.query, ENDPOINT_PARAMS.logs);
    const runs = await store.listRecords(q.num, 'all');
    return json(reply, runs.map((r) => (q.simple ? simplify(r.record) : r.record)));
  });

  app.get('/api/v1/failing_logs', async (request, reply) => {
    const q = parseQuery(request.query, ENDPOINT_PARAMS.failing_logs);
    const runs = await store.listRecords(q.num, q.strict ? 'strict' : 'loose');
    // include_random applies only to strictly failing logs (spec); randsize only with it.
    if (!(q.strict && q.include_random)) return json(reply, runs.map((r) => (q.simple ? simplify(r.record) : r.record)));
    return stream(reply, recordsWithRandom(runs, q.randsize, q.simple));
  });

  app.get('/api/v1/failing_random', async (request, reply) => {
    const q = parseQuery(request.query, ENDPOINT_PARAMS.failing_random);
    const runs = await store.listRecords(q.num, 'strict');
    return stream(reply, failedRandoms(runs, q.randsize));
  });

  const metrics = createQualityMetrics(store, options.intervalSeconds !== undefined ? { intervalSeconds: options.intervalSeconds } : {});
  app.get('/metrics', async (_request, reply) => {
    const text = await metrics.metrics();
    return reply.type(metrics.contentType).send(text);
  });

  app.get('/api/v1/runs', async (request, reply) => {
    const q = parseQuery(request.query, ENDPOINT_PARAMS.runs);
    const runs = await store.listRuns(q.num);
    return json(
      reply,
      runs.map((r) => ({
        id: r.id,
        status: r.status,
        time_of_completion: r.completedMs / 1000,
        createdAt: imfFixdate(r.completedMs),
        tests_passed: r.testsPassed,
        strictly_failing: r.strictlyFailing,
        loosely_failing: r.looselyFailing,
        min_entropy: r.minEntropy,
        ...(r.error !== null ? { error: r.error } : {}),
      })),
    );
  });

  app.get<{ Params: { id: string } }>('/api/v1/runs/:id', async (request, reply) => {
    parseQuery(request.query, {});
    const id = parseRunId(request.params.id);
    const report = await store.getReport(id);
    if (!report) return sendError(reply, 404, { message: `no quality run ${id}`, details: [{ id }] });
    return json(reply, { id, ...report });
  });

  function json(reply: FastifyReply, body: unknown): FastifyReply {
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(body));
  }

  function stream(reply: FastifyReply, chunks: AsyncGenerator<Buffer>): FastifyReply {
    // Not object mode: the highWaterMark counts bytes, so at most ~one expanded chunk waits
    // here besides what the socket holds; the generator is pulled only as the client reads.
    const body = Readable.from(chunks, { objectMode: false, highWaterMark: 64 * 1024 });
    body.on('error', (err) => app.log.error({ err: err.message }, 'streamed quality response failed'));
    return reply.type('application/json; charset=utf-8').send(body);
  }

  /** The `randsize` first kept bits of a run as JSON string content, slice by slice. */
  async function* bitText(run: ListedRun, randsize: number): AsyncGenerator<Buffer> {
    const bits = Math.min(randsize, run.dataBits);
    const bytes = Math.ceil(bits / 8);
    for (let offset = 0; offset < bytes; offset += chunkBytes) {
      const piece = await store.readData(run.id, offset, Math.min(chunkBytes, bytes - offset));
      if (piece.length === 0) return; // pruned meanwhile: the record keeps what was read
      const pieceBits = Math.min(piece.length * 8, bits - offset * 8);
      yield bitsToText(piece, pieceBits);
      if (piece.length < Math.min(chunkBytes, bytes - offset)) return;
    }
  }

  async function* recordsWithRandom(runs: ListedRun[], randsize: number, simple: boolean): AsyncGenerator<Buffer> {
    yield Buffer.from('[');
    for (const [i, run] of runs.entries()) {
      const head = JSON.stringify(simple ? simplify(run.record) : run.record);
      yield Buffer.from(`${i > 0 ? ',' : ''}${head.slice(0, -1)},"random":"`);
      yield* bitText(run, randsize);
      yield Buffer.from('"}');
    }
    yield Buffer.from(']');
  }

  async function* failedRandoms(runs: ListedRun[], randsize: number): AsyncGenerator<Buffer> {
    yield Buffer.from('[');
    for (const [i, run] of runs.entries()) {
      yield Buffer.from(`${i > 0 ? ',' : ''}{"random":"`);
      yield* bitText(run, randsize);
      const tail = { time_of_completion: run.record.time_of_completion, createdAt: imfFixdate(run.completedMs) };
      yield Buffer.from(`",${JSON.stringify(tail).slice(1)}`);
    }
    yield Buffer.from(']');
  }

  return app;
}

