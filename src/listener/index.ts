// The HTTP(S) server under the entropy and quality listeners (Fastify's serverFactory):
// the limits both share, and answers for requests that never reach Fastify's router, in
// the same JSON error shape as every other error ({"message": "...", "details": [...]}). Node's HTTP server handles
// three such cases itself, and by default answers none of them with a body:
//   - bytes its parser rejects ('clientError': we answer 400, 408 or 431);
//   - CONNECT ('connect': with no listener Node just closes the socket, so the client
//     got no answer at all; we answer 405, this server is no proxy);
//   - an HTTP/1.1 request without Host (Node answers an empty 400; RFC 9112 §3.2 requires
//     the 400, we add the body).
import type * as Http from 'node:http';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';

import { http, https } from '../node-http.js';
import { defaultGroups } from '../pqtls/index.js';

/** Writes one complete HTTP/1.1 response with a JSON error body and closes the connection. */
export function writeRawError(
  socket: Duplex,
  status: number,
  message: string,
  details: unknown[],
  headers: Record<string, string> = {},
): void {
  if (socket.destroyed || !socket.writable) return;
  const body = JSON.stringify({ message, details });
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\n${extra}` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/** What a parser refusal says, by Node's error code (ERR_HTTP_REQUEST_TIMEOUT, HPE_HEADER_OVERFLOW). */
export type ClientErrorMessages = Partial<Record<string, string>>;

const CLIENT_ERROR_STATUS: Record<string, number> = { HPE_HEADER_OVERFLOW: 431, ERR_HTTP_REQUEST_TIMEOUT: 408 };
const CLIENT_ERROR_MESSAGES: ClientErrorMessages = {
  HPE_HEADER_OVERFLOW: 'request headers too large',
  ERR_HTTP_REQUEST_TIMEOUT: 'request timed out',
};

/**
 * Fastify's clientErrorHandler (and a plain server's 'clientError'): the parser rejected
 * the request, or it timed out: 431, 408 or 400 in the JSON error shape. A listener may
 * word the messages its own way (the KME names its settings).
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex, messages: ClientErrorMessages = {}): void {
  if (error.code === 'ECONNRESET') return;
  // A response already under way cannot be replaced: the connection just ends.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const code = error.code ?? 'unknown';
  const status = CLIENT_ERROR_STATUS[code] ?? 400;
  const message = messages[code] ?? CLIENT_ERROR_MESSAGES[code] ?? 'malformed HTTP request';
  writeRawError(socket, status, message, [{ code }]);
}

export interface ListenerTls {
  cert: string | Buffer;
  key: string | Buffer;
  /** Oldest protocol accepted (default TLS 1.3). */
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  /** Key-exchange groups in order of preference (`<role>.tls.groups`; default: the runtime's, docs/post-quantum.md). */
  groups?: string;
}

/**
 * The timeouts of every listener (Node's server options; the KME listener takes them too):
 * the whole request within 30 s and its head within 10 s (then 408), an idle keep-alive
 * connection closed after 5 s.
 */
export const LISTENER_TIMEOUTS = { requestTimeout: 30_000, headersTimeout: 10_000, keepAliveTimeout: 5_000 } as const;

export interface ListenerLimits {
  /** Largest request head in bytes (default 8 KiB); larger gets 431. */
  maxHeaderSize?: number;
  /** Connections served at once (default 512); see ConnectionLimits. */
  maxConnections?: number;
}

/**
 * An HTTPS server (HTTP without `tls`) for `handler`, with the shared limits: request head
 * `maxHeaderSize` (default 8 KiB), request 30 s, headers 10 s, keep-alive 5 s, and at
 * most `maxConnections` connections (capConnections).
 */
export function createListener(handler: Http.RequestListener, tls: ListenerTls | undefined, limits: ListenerLimits = {}): Http.Server {
  // requireHostHeader off: Node would answer a Host-less request with an empty 400 itself.
  const common = { maxHeaderSize: limits.maxHeaderSize ?? 8192, ...LISTENER_TIMEOUTS, requireHostHeader: false };
  const server = tls
    ? https.createServer({ ...common, cert: tls.cert, key: tls.key, minVersion: tls.minVersion ?? 'TLSv1.3', ecdhCurve: tls.groups ?? defaultGroups() })
    : http.createServer(common);
  server.keepAliveTimeout = common.keepAliveTimeout;
  server.on('request', guardRawRequests(server, handler));
  capConnections(server, { maxConnections: limits.maxConnections ?? DEFAULT_MAX_CONNECTIONS });
  return server;
}

export const DEFAULT_MAX_CONNECTIONS = 512;

export interface ConnectionCount {
  /** Connections counted at once; the next ones are "over" until a counted one closes. */
  maxConnections: number;
  /**
   * Connections beyond `maxConnections` held just long enough to be refused (default 64);
   * past those, the kernel's accepted sockets are closed at once without an answer (Node's
   * `server.maxConnections`), so a flood never costs more descriptors than the two together.
   */
  rejectSlots?: number;
  /** An over-the-cap connection that sends no request in this time is closed (default 2 s). */
  rejectTimeoutMs?: number;
  /** Connections not counted and never over (the KME's peers, whose links SAEs must not starve). */
  exempt?: (socket: Duplex) => boolean;
}

/**
 * Counts the established connections of an HTTP or HTTPS server (on HTTPS those that
 * finished their handshake; handshakes in progress count toward the hard cap only) and
 * tells which are over the cap. A connection over the cap is not counted, so a slot is free
 * again as soon as a counted connection closes. Every listener's cap is built on this; what
 * it answers to a connection over the cap is the listener's own (capConnections, the KME's
 * ETSI 503).
 */
export function countConnections(server: Http.Server, limits: ConnectionCount): (socket: object) => boolean {
  const max = limits.maxConnections;
  const rejectTimeoutMs = limits.rejectTimeoutMs ?? 2_000;
  server.maxConnections = max + (limits.rejectSlots ?? 64);
  const over = new WeakSet<object>();
  let counted = 0;
  const established = server instanceof tls.Server ? 'secureConnection' : 'connection';
  server.on(established, (socket: Duplex) => {
    if (limits.exempt?.(socket)) return;
    if (counted >= max) {
      over.add(socket);
      const timer = setTimeout(() => socket.destroy(), rejectTimeoutMs);
      timer.unref();
      socket.once('close', () => clearTimeout(timer));
      return;
    }
    counted += 1;
    socket.once('close', () => {
      counted -= 1;
    });
  });
  return (socket) => over.has(socket);
}

export interface ConnectionLimits extends Omit<ConnectionCount, 'exempt'> {
  /** Retry-After of the 503 (default 5 s). */
  retryAfterSeconds?: number;
}

/**
 * Caps the connections of an HTTP or HTTPS server that already has its request handler
 * (call it after `Fastify(...)` returned, or after createServer(handler)): past
 * `maxConnections` a connection gets one `503 {"message","details"}` with Retry-After and
 * is closed; past `maxConnections + rejectSlots` it is closed unanswered, so no client can
 * exhaust the process's file descriptors (countConnections).
 */
export function capConnections(server: Http.Server, limits: ConnectionLimits): void {
  const max = limits.maxConnections;
  const retryAfter = limits.retryAfterSeconds ?? 5;
  const isOver = countConnections(server, limits);
  // Our answer goes before every request handler already registered (Fastify's router).
  const handlers = server.listeners('request') as Http.RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (request: Http.IncomingMessage, response: Http.ServerResponse) => {
    if (isOver(request.socket)) {
      const body = JSON.stringify({
        message: 'server busy: too many connections; retry later',
        details: [{ limit: 'maxConnections', max_connections: max, retry_after_seconds: retryAfter }],
      });
      response.shouldKeepAlive = false;
      response.writeHead(503, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        'retry-after': String(retryAfter),
      });
      response.end(body);
      request.resume();
      return;
    }
    for (const handler of handlers) handler.call(server, request, response);
  });
}

/**
 * Wraps a request handler: an HTTP/1.1 request without Host gets a JSON 400 (RFC 9112
 * §3.2), and CONNECT on the server gets a JSON 405.
 */
function guardRawRequests(server: Http.Server, handler: Http.RequestListener): Http.RequestListener {
  server.on('connect', (request: Http.IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    // The request target of CONNECT is a host:port, never one of our resources.
    writeRawError(socket, 405, 'method CONNECT not allowed: this server is not a proxy', [{ method: 'CONNECT', allow: [] }], {
      Allow: '',
    });
    request.resume();
  });
  return (request, response) => {
    if (request.httpVersion === '1.1' && request.headers.host === undefined) {
      const body = JSON.stringify({ message: 'request has no Host header', details: [{ header: 'Host', problem: 'missing' }] });
      response.shouldKeepAlive = false;
      response.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      response.end(body);
      return;
    }
    handler(request, response);
  };
}
