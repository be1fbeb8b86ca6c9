// The KME's HTTPS server: Fastify over node:https, TLS 1.3 only, client certificates
// required and verified against the cluster CA at the handshake (no certificate, an
// expired one or one from another CA never gets an HTTP response). Routes:
//   ETSI GS QKD 014 (SAE certificates):  /api/v1/keys/{id}/status|enc_keys|dec_keys
//   inter-KME (KME certificates only):  /internal/v1/keys/deliver|cancel|retrieved|orphaned|room
// Every answer, the framework's and the HTTP parser's refusals included, has ETSI's error
// body {message, details} (listener-limits.ts).
import type { TLSSocket } from 'node:tls';

import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

import { defaultGroups } from '../pqtls/index.js';
import { identityFromCertificate, type CertIdentity } from '../pki/identity.js';
import { badRequest, EtsiError, unauthorized } from './errors.js';
import { capSaeConnections, etsiClientErrorHandler, etsiBodyLimit, INTERNAL_BODY_LIMIT, methodNotAllowed, RouteTable } from './listener-limits.js';
import { parseDecKeysBody, parseDecKeysQuery, parseEncKeysBody, parseEncKeysQuery } from './requests.js';
import type { IssuedKeys, KmeService } from './service.js';

export interface KmeServerTls {
  cert: string | Buffer;
  key: string | Buffer;
  ca: string | Buffer;
  /** Key-exchange groups (kme.tls.groups); default: the runtime's. */
  groups?: string;
}

export interface KmeServerOptions {
  service: KmeService;
  tls: KmeServerTls;
  /** A pino logger for request logs (never bodies); default: none. */
  logger?: object | false;
  /** Open SAE connections beyond which new ones get 503 (kme.maxConnections; default 1024). */
  maxConnections?: number;
  /** Time to receive one request, headers and body (kme.requestTimeoutMs; default 10 s). */
  requestTimeoutMs?: number;
}

const identities = new WeakMap<TLSSocket, CertIdentity | null>();

/** The verified identity of the TLS peer, computed once per connection. */
export function callerOf(request: FastifyRequest): CertIdentity {
  const socket = request.raw.socket as TLSSocket;
  let who = identities.get(socket);
  if (who === undefined) {
    const cert = socket.authorized ? socket.getPeerX509Certificate() : undefined;
    who = cert ? identityFromCertificate(cert) : null;
    identities.set(socket, who);
  }
  if (!who) throw unauthorized('the client certificate names no KME or SAE ID');
  return who;
}

type Params = { id: string };

export function buildKmeServer(opts: KmeServerOptions): FastifyInstance {
  const { service } = opts;
  const requestTimeout = opts.requestTimeoutMs ?? 10_000;
  const app = Fastify({
    https: {
      cert: opts.tls.cert,
      key: opts.tls.key,
      ca: opts.tls.ca,
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.3',
      ecdhCurve: opts.tls.groups ?? defaultGroups(),
      // A client that never finishes its handshake, its headers or its body is cut off:
      // checked every second rather than Node's default 30 s.
      handshakeTimeout: requestTimeout,
      headersTimeout: Math.min(requestTimeout, 5_000),
      connectionsCheckingInterval: Math.min(1_000, requestTimeout),
    },
    logger: opts.logger ?? false,
    // ETSI requests are a few KiB (etsiBodyLimit); inter-KME deliveries, up to 20,000 key
    // records, get INTERNAL_BODY_LIMIT, and only a KME certificate gets that far.
    bodyLimit: etsiBodyLimit(service.limits),
    requestTimeout,
    clientErrorHandler: etsiClientErrorHandler,
    return503OnClosing: true,
  } as Parameters<typeof Fastify>[0]) as unknown as FastifyInstance;

  const routes = new RouteTable();
  app.addHook('onRoute', (route) => {
    routes.add(route.method, route.url);
    if (route.url.startsWith('/internal/')) route.bodyLimit ??= INTERNAL_BODY_LIMIT;
  });
  const overCap = capSaeConnections(app, opts.maxConnections ?? 1024, (socket) => {
    const cert = socket.authorized ? socket.getPeerX509Certificate() : undefined;
    return cert !== undefined && identityFromCertificate(cert)?.role === 'kme';
  });
  // Before any body is read: connections over the cap, and SAEs on the inter-KME paths
  // (a callback hook: it runs on every request, and a promise per request costs).
  app.addHook('onRequest', (request, reply, done) => {
    let refusal = overCap(request.raw.socket, reply);
    try {
      if (!refusal && request.url.startsWith('/internal/') && callerOf(request).role !== 'kme') refusal = unauthorized('the inter-KME path needs a KME certificate');
    } catch (err) {
      refusal = err as EtsiError;
    }
    done(refusal);
  });

  // ETSI clients send `Content-Type: application/json` on every request, with or without a
  // body (the QURSA C wrapper on its GETs; a POST enc_keys with no options may have an empty
  // body): an empty JSON body is "no body", not an error.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim().length === 0) return done(null, undefined);
    return parseJson(request, body as string, done);
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
    if (err instanceof EtsiError) {
      if (err.retryAfterSeconds !== undefined) void reply.header('retry-after', String(err.retryAfterSeconds));
      return reply.code(err.status).send(err.body());
    }
    const status = err.statusCode ?? 500;
    if (status === 413) {
      const limit = request.routeOptions.bodyLimit ?? etsiBodyLimit(service.limits);
      return reply.code(413).send({ message: `request body too large: at most ${limit} bytes here`, details: [{ body_limit: limit }] });
    }
    if (status >= 400 && status < 500) {
      // Framework-level refusals (malformed JSON, wrong content type, body too large) are
      // "bad request format" in ETSI's terms; the framework's internal codes stay inside.
      return reply.code(400).send({ message: `bad request: ${err.message}`, details: [] });
    }
    reply.log.error({ err: err.message }, 'kme: internal error');
    return reply.code(status >= 500 && status < 600 ? status : 500).send({ message: 'internal error', details: [] });
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = routes.methodsFor(path);
    if (allowed.length > 0) return methodNotAllowed(reply, request.method, path, allowed);
    return reply.code(404).send({ message: `no such endpoint: ${request.method} ${path}`, details: [] });
  });

  /** GET takes its parameters in the query; a body would be silently ignored, so it is refused. */
  const noBody = (request: FastifyRequest): void => {
    const headers = request.raw.headers;
    if (Number(headers['content-length'] ?? 0) > 0 || headers['transfer-encoding'] !== undefined) {
      throw badRequest(`GET takes its parameters in the query string, not in a body; send a body with POST`, [{ method: 'GET', problem: 'request body' }]);
    }
  };

  const send = (reply: FastifyReply, body: unknown): FastifyReply => reply.code(200).header('cache-control', 'no-store').send(body);

  app.get<{ Params: Params }>('/api/v1/keys/:id/status', async (request, reply) => {
    noBody(request);
    return send(reply, await service.status(callerOf(request), request.params.id));
  });

  /** Sends new keys and tells the service whether the answer left whole (docs/kme.md, "What a crash of the origin can cost"). */
  const sendIssued = (reply: FastifyReply, issued: IssuedKeys): FastifyReply => {
    const res = reply.raw;
    // A client that hung up while its keys were being made never gets them.
    if (res.destroyed || !res.socket || res.socket.destroyed) issued.settle(false);
    else res.once('close', () => issued.settle(res.writableFinished));
    return send(reply, issued.container);
  };

  app.get<{ Params: Params }>('/api/v1/keys/:id/enc_keys', async (request, reply) => {
    const caller = callerOf(request);
    noBody(request);
    const req = parseEncKeysQuery(request.query as Record<string, unknown>, service.limits);
    return sendIssued(reply, await service.encKeys(caller, request.params.id, req));
  });

  app.post<{ Params: Params }>('/api/v1/keys/:id/enc_keys', async (request, reply) => {
    const caller = callerOf(request);
    const query = Object.keys(request.query as object);
    if (query.length > 0) throw badRequest(`POST enc_keys takes its parameters in the body, not the query (${query.join(', ')})`);
    const req = parseEncKeysBody(request.body, service.limits);
    return sendIssued(reply, await service.encKeys(caller, request.params.id, req));
  });

  app.get<{ Params: Params }>('/api/v1/keys/:id/dec_keys', async (request, reply) => {
    const caller = callerOf(request);
    noBody(request);
    const items = parseDecKeysQuery(request.query as Record<string, unknown>, service.limits);
    return send(reply, await service.decKeys(caller, request.params.id, items));
  });

  app.post<{ Params: Params }>('/api/v1/keys/:id/dec_keys', async (request, reply) => {
    const caller = callerOf(request);
    const items = parseDecKeysBody(request.body, service.limits);
    return send(reply, await service.decKeys(caller, request.params.id, items));
  });

  app.post('/internal/v1/keys/deliver', async (request, reply) => send(reply, await service.deliver(callerOf(request), request.body)));
  app.post('/internal/v1/keys/cancel', async (request, reply) => send(reply, await service.cancel(callerOf(request), request.body)));
  app.post('/internal/v1/keys/retrieved', async (request, reply) => send(reply, await service.retrieved(callerOf(request), request.body)));
  app.post('/internal/v1/keys/orphaned', async (request, reply) => send(reply, await service.orphaned(callerOf(request), request.body)));
  app.post('/internal/v1/keys/room', async (request, reply) => send(reply, await service.room(callerOf(request), request.body)));

  return app;
}
