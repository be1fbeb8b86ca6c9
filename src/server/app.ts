// The entropy role's HTTP app (Fastify: JSON-schema validation for the appliance body,
// a fast router and reply path, pino logging built in, and a well-kept project).
//
//   GET  /api/v1/quantum-entropy?size=N   the spec's API (checks: 400, 401, 429, 403, 503)
//   POST /api/v1/entropy                   the provider's appliance shape, same pool/accounts
//   GET  /api/v1/capabilities              what the appliance face accepts
//   GET  /healthz, GET /metrics            operations (no token)
//
// Every error, Fastify's own included, is {"message": "...", "details": [...]}.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger, LoggerOptions } from 'pino';

import { answerClientError, createListener, type ListenerTls } from '../listener/index.js';
import type { EntropyPool } from '../pool/pool.js';
import type { SourceHealth } from '../sources/types.js';
import type { EntropyAccounts } from './accounts-port.js';
import { BodyBuffers } from './body-buffers.js';
import { applianceBody, quantumEntropyBody } from './encode.js';
import { endOfTurn } from './end-of-turn.js';
import { ApiError, sendApiError, unauthorized } from './errors.js';
import { createEntropyMetrics, type EntropyMetrics } from './metrics.js';
import { watchServer, withTlsMetrics } from '../pqtls/index.js';
import { acceptsJson, bearerToken, parseSize } from './query.js';

export const BLOCK_SIZE = 1024;
export const MAX_APPLIANCE_BLOCK_SIZE = 1024;
export const MAX_APPLIANCE_BLOCK_COUNT = 512;

export type TlsSettings = ListenerTls;

export interface EntropyAppOptions {
  pool: EntropyPool;
  accounts: EntropyAccounts;
  sourceHealth: () => SourceHealth;
  /** HTTPS settings; omit only for plain HTTP (loopback, or behind a TLS proxy). */
  tls?: TlsSettings;
  /** pino options, or false for no logs (default: info to stdout). */
  logger?: LoggerOptions | false;
  /** An existing pino logger to log through instead (the daemon's, so all lines match). */
  loggerInstance?: Logger;
  /** Log one line per request (default false, as for every role's listener). */
  logRequests?: boolean;
  /** Clock for the rate-limit window and allotment periods (ms since the epoch). */
  now?: () => number;
  /** Retry-After on 503 (default 1 s). */
  shortSupplyRetrySeconds?: number;
  /** Largest request head in bytes (default 8 KiB); larger gets 431. */
  maxHeaderSize?: number;
  /** Connections served at once (`entropy.listen.maxConnections`, default 512); more get 503. */
  maxConnections?: number;
  /** Add Node process metrics to /metrics (default false). */
  processMetrics?: boolean;
}

const ROUTES: Record<string, string[]> = {
  '/api/v1/quantum-entropy': ['GET'],
  '/api/v1/entropy': ['POST'],
  '/api/v1/capabilities': ['GET'],
  '/healthz': ['GET'],
  '/metrics': ['GET'],
};

const applianceSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['block_size', 'block_count'],
  properties: {
    block_size: { type: 'integer', minimum: 1, maximum: MAX_APPLIANCE_BLOCK_SIZE },
    block_count: { type: 'integer', minimum: 1, maximum: MAX_APPLIANCE_BLOCK_COUNT },
  },
} as const;

export async function buildEntropyApp(options: EntropyAppOptions): Promise<FastifyInstance> {
  const now = options.now ?? Date.now;
  const maxHeaderSize = options.maxHeaderSize ?? 8192;
  const bodies = new BodyBuffers();
  const metrics = createEntropyMetrics(options.pool, options.sourceHealth, {
    processMetrics: options.processMetrics ?? false,
  });

  const logger: LoggerOptions | false =
    options.logger === false
      ? false
      : {
          level: 'info',
          ...options.logger,
          // Tokens never reach a log line, whatever serializers are configured.
          redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' },
        };

  // `logger` holds pino options or false; cast only to satisfy Fastify's overloads.
  const logging = options.loggerInstance
    ? { loggerInstance: options.loggerInstance as FastifyBaseLogger }
    : { logger: logger as boolean };
  const app = Fastify({
    ...logging,
    logController: new LogController({ disableRequestLogging: options.logRequests !== true }),
    bodyLimit: 4096,
    exposeHeadRoutes: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true, useDefaults: false } },
    serverFactory: (handler) =>
      createListener(handler, options.tls, { maxHeaderSize, ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}) }),
    clientErrorHandler: (error, socket) => answerClientError(error, socket),
    frameworkErrors: (error, _request, reply) => {
      void sendApiError(reply, new ApiError(400, 'malformed request', [{ problem: error.message }]));
    },
  });

  if (options.tls) watchServer(app.server, { face: 'entropy', log: app.log });

  // Only JSON bodies (the appliance route); anything else is 415.
  app.removeContentTypeParser('text/plain');

  app.addHook('onResponse', (request, reply, done) => {
    metrics.requests.inc({ route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) });
    done();
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) return sendApiError(reply, error);
    if (error.validation) {
      const details = error.validation.map((v) => ({
        field: v.instancePath.replace(/^\//, '') || (v.params as { missingProperty?: string }).missingProperty || 'body',
        problem: v.message ?? 'invalid',
      }));
      return sendApiError(reply, new ApiError(400, 'request body invalid', details));
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return sendApiError(reply, new ApiError(status, clientMessage(error), error.code ? [{ code: error.code }] : []));
    }
    request.log.error({ err: error }, 'request failed');
    return sendApiError(reply, new ApiError(500, 'internal server error'));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0]!;
    const allowed = ROUTES[path];
    if (allowed) {
      reply.header('allow', allowed.join(', '));
      return sendApiError(reply, new ApiError(405, `method ${request.method} not allowed`, [{ allow: allowed }]));
    }
    return sendApiError(reply, new ApiError(404, 'not found', [{ path: path.slice(0, 200) }]));
  });

  /** The shared checks of both entropy faces, in the spec's order after 400: 401, 429, 403, 503. */
  async function take(request: FastifyRequest, bytes: number): Promise<Buffer> {
    const token = bearerToken(request.headers.authorization);
    const at = now();
    const auth = await options.accounts.authenticate(token, at);
    if (!auth.ok) {
      throw unauthorized(`access token ${auth.reason === 'unknown' ? 'invalid' : auth.reason}`, [
        { header: 'Authorization', problem: auth.reason },
      ], true);
    }
    // 429 and 403 in one step: one transaction, shared with the requests arriving together.
    const admission = await options.accounts.admit(auth, bytes, at);
    if (!admission.ok && admission.refusal === 'rate-limit') {
      throw new ApiError(
        429,
        'rate limit reached: at most 30 requests per 10 seconds per token',
        [{ limit: 30, window_seconds: 10 }],
        Math.max(1, Math.ceil(admission.retryAfterMs / 1000)),
      );
    }
    if (!admission.ok) {
      const detail: Record<string, unknown> = { requested_bytes: bytes, remaining_bytes: admission.remaining };
      if (admission.resetsAt !== undefined) detail.resets_at = new Date(admission.resetsAt).toISOString();
      throw new ApiError(403, 'allotment for the current period would be exceeded', [detail]);
    }
    const data = options.pool.take(bytes);
    if (!data) {
      await admission.release();
      throw new ApiError(
        503,
        'not enough entropy supply for this request; retry later',
        [{ requested_bytes: bytes }],
        options.shortSupplyRetrySeconds ?? 1,
      );
    }
    return data;
  }

  app.get('/api/v1/quantum-entropy', async (request, reply) => {
    if (!acceptsJson(request.headers.accept)) {
      throw new ApiError(400, 'this API answers application/json only', [{ header: 'Accept', problem: 'excludes application/json' }]);
    }
    const size = parseSize(request.query);
    const data = await take(request, size * BLOCK_SIZE);
    await endOfTurn();
    const body = quantumEntropyBody(data, bodies, reply.raw);
    data.fill(0);
    metrics.bytesServed.inc({ route: '/api/v1/quantum-entropy' }, size * BLOCK_SIZE);
    return sendEntropy(reply, body);
  });

  app.post<{ Body: { block_size: number; block_count: number } }>(
    '/api/v1/entropy',
    { schema: { body: applianceSchema } },
    async (request, reply) => {
      if (Object.keys(request.query as object).length > 0) {
        throw new ApiError(400, 'this API takes no query parameters', [{ problem: 'unexpected query string' }]);
      }
      const { block_size: blockSize, block_count: blockCount } = request.body;
      const bytes = blockSize * blockCount;
      const data = await take(request, bytes);
      await endOfTurn();
      const body = applianceBody(data, blockSize);
      data.fill(0);
      metrics.bytesServed.inc({ route: '/api/v1/entropy' }, bytes);
      return sendEntropy(reply, body);
    },
  );

  app.get('/api/v1/capabilities', async () => ({
    api_versions: ['v1'],
    block_size: { min: 1, max: MAX_APPLIANCE_BLOCK_SIZE },
    block_count: { min: 1, max: MAX_APPLIANCE_BLOCK_COUNT },
    quantum_entropy: { block_bytes: BLOCK_SIZE, size: { min: 1, max: 512, default: 1 } },
    rate_limit: { requests: 30, window_seconds: 10 },
    extensions: [],
    source: { name: options.sourceHealth().name, development: options.sourceHealth().development },
  }));

  app.get('/healthz', async (_request, reply) => {
    const source = options.sourceHealth();
    const pool = options.pool.stats();
    const warnings: string[] = [];
    if (source.development) warnings.push('development source: entropy comes from the OS CSPRNG, not a quantum source');
    if (source.state === 'failed') warnings.push(`source ${source.name} out of service${source.message ? `: ${source.message}` : ''}`);
    if (source.state === 'degraded') warnings.push(`source ${source.name} degraded${source.message ? `: ${source.message}` : ''}`);
    const status = source.state === 'failed' ? 'failing' : source.state === 'ok' && !source.development ? 'ok' : 'degraded';
    reply.header('cache-control', 'no-store').type('application/json; charset=utf-8');
    // Ends with a newline, as a terminal wants: `curl /healthz; curl /metrics` stays readable.
    return reply.code(source.state === 'failed' ? 503 : 200).send(`${JSON.stringify({ status, source, pool, warnings })}\n`);
  });

  app.get('/metrics', async (_request, reply) => {
    const registry = withTlsMetrics(metrics.registry);
    return reply.type(registry.contentType).send(await registry.metrics());
  });

  app.decorate('entropyMetrics', metrics);
  await app.ready();
  return app;
}

function sendEntropy(reply: FastifyReply, body: Buffer): FastifyReply {
  return reply.header('content-type', 'application/json').header('cache-control', 'no-store').send(body);
}

function clientMessage(error: FastifyError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content type: send application/json';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request body too large';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'request body is not valid JSON';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'request body is empty';
    default:
      return error.message.split('\n', 1)[0]!.slice(0, 200);
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    entropyMetrics: EntropyMetrics;
  }
}
