// What the KME listener bounds, and how it says so: every refusal, including those of the
// HTTP parser and of the framework, answers with ETSI's error body {message, details}.
//   - body: an ETSI request fits in a few KiB (etsiBodyLimit); only inter-KME calls, whose
//     caller is checked before the body is read, may send up to INTERNAL_BODY_LIMIT;
//   - time: headers within 5 s and a whole request within kme.requestTimeoutMs (408);
//   - connections: SAE connections beyond kme.maxConnections get 503 with Retry-After;
//     past twice that, new TCP connections are dropped before TLS (file descriptors);
//   - methods: a known path with another method gets 405 with Allow.
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

import type { FastifyInstance, FastifyReply } from 'fastify';

import { answerClientError, countConnections } from '../listener/index.js';

import { unavailable, type EtsiError } from './errors.js';
import type { Limits } from './requests.js';

/** Deliveries carry up to 20,000 key records. */
export const INTERNAL_BODY_LIMIT = 16 * 1024 * 1024;

/**
 * The largest ETSI request these limits allow, with room to spare: a dec_keys body of
 * maxKeyPerRequest items (a UUID, a master_SAE_ID and a small extension each: 160 bytes)
 * or an enc_keys body naming maxSaeIdCount SAEs (64-character IDs quoted: 80 bytes each),
 * plus 4 KiB for the rest. 25 KiB with the defaults.
 */
export function etsiBodyLimit(limits: Pick<Limits, 'maxKeyPerRequest' | 'maxSaeIdCount'>): number {
  return 4096 + 160 * limits.maxKeyPerRequest + 80 * limits.maxSaeIdCount;
}

/** Fastify's clientErrorHandler: the HTTP parser's refusals (malformed, too large, too slow) in ETSI's shape, naming the KME's limits. */
export function etsiClientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  answerClientError(err, socket, {
    ERR_HTTP_REQUEST_TIMEOUT: 'the request was not received in time (kme.requestTimeoutMs)',
    HPE_HEADER_OVERFLOW: 'the request headers are too large (at most 16 KiB)',
  });
}

/** Route patterns and their methods, to tell "no such path" (404) from "not with this method" (405). */
export class RouteTable {
  private readonly routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];

  add(method: string | string[], url: string): void {
    const pattern = new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}$`);
    let entry = this.routes.find((r) => r.pattern.source === pattern.source);
    if (!entry) this.routes.push((entry = { pattern, methods: new Set() }));
    for (const m of [method].flat()) entry.methods.add(m.toUpperCase());
  }

  methodsFor(path: string): string[] {
    return [...new Set(this.routes.filter((r) => r.pattern.test(path)).flatMap((r) => [...r.methods]))].sort();
  }
}

export function methodNotAllowed(reply: FastifyReply, method: string, path: string, allowed: string[]): FastifyReply {
  return reply
    .code(405)
    .header('allow', allowed.join(', '))
    .send({ message: `${method} is not allowed on ${path}; use ${allowed.join(' or ')}`, details: [{ method, allowed }] });
}

/**
 * Caps the connections SAEs hold open (countConnections, as every listener does).
 * Connections of `exempt` clients (peer KMEs, whose links must not be starved by SAEs) are
 * not counted. Returns the check for a request's socket: a connection over the cap
 * completes its handshake and its first request gets 503 with Retry-After and
 * `Connection: close`. Past twice the cap plus 64, new TCP connections are dropped before TLS.
 */
export function capSaeConnections(app: FastifyInstance, cap: number, exempt: (socket: TLSSocket) => boolean): (socket: object, reply: FastifyReply) => EtsiError | undefined {
  const isOver = countConnections(app.server, { maxConnections: cap, rejectSlots: cap + 64, exempt: (socket) => exempt(socket as TLSSocket) });
  return (socket, reply) => {
    if (!isOver(socket)) return undefined;
    void reply.header('connection', 'close');
    return unavailable(`too many open connections to this KME (kme.maxConnections is ${cap}); retry later`, [{ max_connections: cap }], 1);
  };
}
