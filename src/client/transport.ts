// The client's HTTP(S) transport on Node's own http/https modules, with keep-alive agents.
// (undici, used before, parses HTTP in WebAssembly: importing it and making the first
// request cost 25 MB of RSS, a third of a feeder-only daemon; Node's native parser costs
// about 3 MB. docs/feeder.md, "Memory".)
import type * as Http from 'node:http';
import type * as Https from 'node:https';
import type { TLSSocket } from 'node:tls';

import { deadline } from '../deadline.js';
import { http, https } from '../node-http.js';
import { RecycledBuffers } from '../recycled-buffers.js';
import { checkClientSocket, defaultGroups, type ClientWatch } from '../pqtls/index.js';

export interface TransportOptions {
  /** Keep-alive connections per origin. */
  connections: number;
  /** Whole-request time limit (connect, head and body). */
  timeoutMs: number;
  /** PEM CA certificate(s) to trust instead of the system store. */
  ca?: string | Buffer;
  /** TLS key-exchange groups offered, in order of preference (default: the runtime's). */
  tlsGroups?: string;
  /** Counts and logs each TLS connection's negotiated group (docs/post-quantum.md). */
  tlsWatch?: ClientWatch;
}

export interface TransportRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** Largest body accepted for a status; a larger one fails the request. */
  bodyLimit: (status: number) => number;
  signal?: AbortSignal;
}

export interface TransportResponse {
  statusCode: number;
  headers: Http.IncomingHttpHeaders;
  /** Hand it back with release() once read: it is erased and may be reused. */
  body: Buffer;
}

/** `phase` says whether the server answered before things went wrong. */
export class TransportError extends Error {
  constructor(
    readonly phase: 'request' | 'response',
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'TransportError';
  }
}

/** Idle keep-alive connections are closed after this long. */
const IDLE_MS = 10_000;

export class HttpTransport {
  private readonly httpAgent: Http.Agent;
  private readonly httpsAgent: Https.Agent;
  /**
   * Bodies of a stated length are received into these (a feeder's are all one length):
   * room for two 512-block bodies, the one being decoded and the one asked for ahead.
   */
  private readonly bodies = new RecycledBuffers(2 * 1024 * 1024);
  private readonly recycled = new WeakSet<Buffer>();

  constructor(private readonly options: TransportOptions) {
    // `timeout` on an agent closes only *idle* pooled sockets; requests in flight are
    // bounded by the per-request signal below.
    const common = { keepAlive: true, maxSockets: options.connections, maxFreeSockets: options.connections, timeout: IDLE_MS };
    this.httpAgent = new http.Agent(common);
    this.httpsAgent = new https.Agent({
      ...common,
      minVersion: 'TLSv1.2',
      ecdhCurve: options.tlsGroups ?? defaultGroups(),
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
    });
    const watch = options.tlsWatch;
    if (watch) watchAgent(this.httpsAgent, watch);
  }

  request(url: URL, req: TransportRequest): Promise<TransportResponse> {
    const limit = deadline(this.options.timeoutMs, req.signal);
    return this.send(url, req, limit.signal).finally(() => limit.clear());
  }

  private send(url: URL, req: TransportRequest, signal: AbortSignal): Promise<TransportResponse> {
    const secure = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      let answered = false;
      const outgoing = (secure ? https : http).request(
        url,
        { method: req.method, headers: req.headers, agent: secure ? this.httpsAgent : this.httpAgent, signal },
        (res) => {
          answered = true;
          const status = res.statusCode ?? 0;
          const limit = req.bodyLimit(status);
          const body = this.receive(res.headers['content-length'], limit);
          let total = 0;
          res.on('data', (chunk: Buffer) => {
            total += chunk.length;
            if (total > limit) res.destroy(new Error(`response larger than ${limit} bytes`));
            else body.add(chunk);
          });
          res.on('end', () => resolve({ statusCode: status, headers: res.headers, body: body.take(total) }));
          res.on('error', (err) => reject(new TransportError('response', reason(err, signal), status)));
        },
      );
      outgoing.on('error', (err) => {
        if (!answered) reject(new TransportError('request', reason(err, signal)));
      });
      outgoing.end(req.body);
    });
  }

  /** Erases a response's body; the transport may reuse its memory for a later one. */
  release(body: Buffer): void {
    if (this.recycled.has(body)) {
      this.recycled.delete(body);
      this.bodies.release(body);
    } else {
      body.fill(0);
    }
  }

  /**
   * Where a body is gathered: straight into one recycled buffer when the server states
   * its length (within the limit), else chunk by chunk. Either way each chunk is erased
   * once copied (an entropy response's chunks hold its bytes, base64-encoded).
   */
  private receive(contentLength: string | undefined, limit: number): { add(chunk: Buffer): void; take(total: number): Buffer } {
    const stated = contentLength !== undefined && /^\d{1,10}$/.test(contentLength) ? Number(contentLength) : -1;
    if (stated > 0 && stated <= limit) {
      const target = this.bodies.acquire(stated);
      this.recycled.add(target);
      let at = 0;
      return {
        add: (chunk) => {
          // Node's parser stops a body at its stated length; this guards the copy anyway.
          at += chunk.copy(target, at);
          chunk.fill(0);
        },
        take: (total) => (total === stated ? target : target.subarray(0, at)),
      };
    }
    const chunks: Buffer[] = [];
    return {
      add: (chunk) => void chunks.push(chunk),
      take: (total) => joinAndErase(chunks, total),
    };
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/**
 * The body in one Buffer; the chunks it was read in are erased once copied (an entropy
 * response's chunks hold its bytes, base64-encoded, and the caller erases only the body).
 */
function joinAndErase(chunks: Buffer[], total: number): Buffer {
  if (chunks.length === 1) return chunks[0]!;
  const body = Buffer.concat(chunks, total);
  for (const chunk of chunks) chunk.fill(0);
  return body;
}

/**
 * Observes the group of every connection the agent opens, once, when its handshake is
 * done (a pooled connection reused later is not counted again); a refused connection
 * fails the request that opened it with NotPostQuantumError's message.
 */
function watchAgent(agent: Https.Agent, watch: ClientWatch): void {
  const create = agent.createConnection.bind(agent) as (options: Https.RequestOptions, callback?: unknown) => TLSSocket;
  agent.createConnection = ((options: Https.RequestOptions, callback?: unknown) => {
    const socket = create(options, callback);
    socket.once('secureConnect', () => {
      const offeredGroups = watch.offeredGroups ?? (options as { ecdhCurve?: string }).ecdhCurve;
      const refused = checkClientSocket(socket, options.host ?? options.hostname ?? undefined, { ...watch, offeredGroups });
      if (refused) socket.destroy(refused);
    });
    return socket;
  }) as typeof agent.createConnection;
}

/** One line for what went wrong on the wire. */
function reason(err: Error & { code?: string }, signal: AbortSignal): string {
  if (signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError') return 'timed out';
  return err.code && !err.message.includes(err.code) ? `${err.message} (${err.code})` : err.message;
}
