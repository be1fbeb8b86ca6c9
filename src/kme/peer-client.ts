// Calls from this KME to its peers: mutual TLS with this site's KME certificate, TLS 1.3,
// keep-alive connections reused across requests (one undici Agent per peer), and the
// peer's certificate must name the expected KME ID (a valid cluster certificate of some
// other site or of an SAE is not enough).
import { checkServerIdentity, type PeerCertificate } from 'node:tls';

import { Agent, request } from 'undici';

import { deadline } from '../deadline.js';
import { identityFromNames } from '../pki/identity.js';
import { defaultGroups, type TlsLog } from '../pqtls/index.js';
import { watchedConnector } from '../pqtls/undici-connector.js';

export interface PeerTls {
  cert: string | Buffer;
  key: string | Buffer;
  ca: string | Buffer;
}

/** How this site's calls to one peer use TLS key exchange (docs/post-quantum.md). */
export interface PeerKeyExchange {
  /** Groups offered, in order of preference. */
  groups: string;
  /** Refuse a connection that did not negotiate a hybrid group. */
  requirePostQuantum: boolean;
  log: TlsLog;
  onGroup?: (group: string) => void;
}

/** What went wrong with a call, and whether the peer may have acted on it. */
export class PeerCallError extends Error {
  constructor(
    message: string,
    /** True when the request may have reached the peer (timeout, reset, 5xx). */
    readonly maybeDelivered: boolean,
    readonly status?: number,
    /** The `details` of the peer's error body, when it sent one. */
    readonly details?: unknown[],
  ) {
    super(message);
    this.name = 'PeerCallError';
  }
}

const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ERR_TLS_CERT_ALTNAME_INVALID', 'UND_ERR_CONNECT_TIMEOUT', 'QENTROPY_TLS_NOT_POST_QUANTUM']);

function errorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export class PeerClient {
  private agent: Agent;

  constructor(
    readonly peerId: string,
    readonly baseUrl: string,
    tls: PeerTls,
    private readonly timeoutMs: number,
    private readonly exchange?: PeerKeyExchange,
  ) {
    this.agent = this.makeAgent(tls);
  }

  /**
   * Uses new credentials (a renewed KME certificate or CA) for every call from now on.
   * Calls already running finish on their connections, which then close.
   */
  async updateTls(tls: PeerTls): Promise<void> {
    const old = this.agent;
    this.agent = this.makeAgent(tls);
    await old.close();
  }

  private makeAgent(tls: PeerTls): Agent {
    const peerId = this.peerId;
    return new Agent({
      connections: 16,
      keepAliveTimeout: 60_000,
      connect: watchedConnector({
        ecdhCurve: this.exchange?.groups ?? defaultGroups(),
        cert: tls.cert,
        key: tls.key,
        ca: tls.ca,
        minVersion: 'TLSv1.3',
        checkServerIdentity: (host: string, cert: PeerCertificate) => {
          const hostError = checkServerIdentity(host, cert);
          if (hostError) return hostError;
          const who = identityFromNames(cert.subjectaltname, cert.subject?.CN as string | undefined);
          if (!who || who.role !== 'kme' || who.id !== peerId) {
            return new Error(`the server at ${host} is not KME '${peerId}'`);
          }
          return undefined;
        },
      }, {
        face: 'kme-link-client',
        log: this.exchange?.log ?? { debug: () => undefined, warn: () => undefined },
        requireHybrid: this.exchange?.requirePostQuantum ?? false,
        who: { peer: peerId },
        ...(this.exchange?.onGroup ? { onGroup: this.exchange.onGroup } : {}),
      }),
    });
  }

  /** POSTs JSON to an inter-KME path; resolves the parsed reply or throws PeerCallError. */
  async post<T>(path: string, body: unknown, timeoutMs = this.timeoutMs): Promise<T> {
    const limit = deadline(timeoutMs);
    try {
      return await this.postWithin<T>(path, body, timeoutMs, limit.signal);
    } finally {
      limit.clear();
    }
  }

  private async postWithin<T>(path: string, body: unknown, timeoutMs: number, signal: AbortSignal): Promise<T> {
    let res;
    try {
      res = await request(`${this.baseUrl}${path}`, {
        method: 'POST',
        dispatcher: this.agent,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal,
      });
    } catch (err) {
      const code = errorCode(err);
      const name = (err as Error).name;
      const reason = name === 'TimeoutError' || name === 'AbortError' ? `no answer within ${timeoutMs} ms` : `${(err as Error).message}${code ? ` (${code})` : ''}`;
      throw new PeerCallError(`peer KME '${this.peerId}' unreachable: ${reason}`, !(code && NOT_SENT_CODES.has(code)));
    }
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      throw new PeerCallError(`peer KME '${this.peerId}' broke off its reply: ${(err as Error).message}`, true, res.statusCode);
    }
    if (res.statusCode !== 200) {
      let message = text.slice(0, 200);
      let details: unknown[] | undefined;
      try {
        const parsed = JSON.parse(text) as { message?: unknown; details?: unknown };
        message = String(parsed.message ?? message);
        if (Array.isArray(parsed.details)) details = parsed.details;
      } catch {
        /* not JSON: keep the text */
      }
      // A 4xx or a 503 from our own peer code means the peer refused and stored nothing.
      const maybe = res.statusCode >= 500 && res.statusCode !== 503;
      throw new PeerCallError(`peer KME '${this.peerId}' answered ${res.statusCode}: ${message}`, maybe, res.statusCode, details);
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new PeerCallError(`peer KME '${this.peerId}' sent a reply that is not JSON`, true, res.statusCode);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
