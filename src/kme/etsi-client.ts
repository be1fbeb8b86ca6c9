// An ETSI GS QKD 014 client over mutual TLS (the SAE side): status, enc_keys, dec_keys.
// Used by `qentropy kme status|enc|dec`, by tests and by the benchmark. Connections are
// kept alive and reused.
import { Agent, request } from 'undici';

export interface EtsiClientOptions {
  /** Base URL of the site's KME, e.g. https://kme-a.example:8443 */
  url: string;
  cert: string | Buffer;
  key: string | Buffer;
  ca: string | Buffer;
  timeoutMs?: number;
  connections?: number;
}

export interface EtsiKey {
  key_ID: string;
  key: string;
}

export class EtsiClientError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'EtsiClientError';
  }
}

export class EtsiClient {
  private readonly agent: Agent;
  private readonly base: string;
  private readonly timeoutMs: number;

  constructor(opts: EtsiClientOptions) {
    let parsed: URL;
    try {
      parsed = new URL(opts.url);
    } catch {
      throw new EtsiClientError(`invalid KME URL '${opts.url}'`, undefined, undefined);
    }
    if (parsed.protocol !== 'https:') throw new EtsiClientError(`KME URL '${opts.url}' must be https://`, undefined, undefined);
    this.base = opts.url.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.agent = new Agent({
      connections: opts.connections ?? 4,
      connect: { cert: opts.cert, key: opts.key, ca: opts.ca, minVersion: 'TLSv1.3' },
    });
  }

  /** Raw call: the status code and parsed JSON body (no throwing on 4xx/5xx). */
  async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    let res;
    try {
      res = await request(`${this.base}${path}`, {
        method,
        dispatcher: this.agent,
        ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
      const code = e.code ?? e.cause?.code;
      const why = e.name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : `${e.cause?.message ?? e.message}${code ? ` (${code})` : ''}`;
      throw new EtsiClientError(`cannot reach the KME at ${this.base}: ${why}`, undefined, undefined);
    }
    const text = await res.body.text();
    let parsed: unknown = text;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      /* keep text */
    }
    return { status: res.statusCode, body: parsed };
  }

  private async ok<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await this.call(method, path, body);
    if (res.status !== 200) {
      const message = (res.body as { message?: unknown } | undefined)?.message;
      throw new EtsiClientError(`KME answered ${res.status}: ${typeof message === 'string' ? message : JSON.stringify(res.body)}`, res.status, res.body);
    }
    return res.body as T;
  }

  status(id: string): Promise<Record<string, unknown>> {
    return this.ok('GET', `/api/v1/keys/${encodeURIComponent(id)}/status`);
  }

  /** POST enc_keys (number, size, additional slave SAEs). */
  async encKeys(id: string, opts: { number?: number; size?: number; additionalSlaveSaeIds?: string[] } = {}): Promise<EtsiKey[]> {
    const body: Record<string, unknown> = {};
    if (opts.number !== undefined) body.number = opts.number;
    if (opts.size !== undefined) body.size = opts.size;
    if (opts.additionalSlaveSaeIds?.length) body.additional_slave_SAE_IDs = opts.additionalSlaveSaeIds;
    const res = await this.ok<{ keys: EtsiKey[] }>('POST', `/api/v1/keys/${encodeURIComponent(id)}/enc_keys`, body);
    return res.keys;
  }

  async decKeys(id: string, keyIds: string[]): Promise<EtsiKey[]> {
    const res = await this.ok<{ keys: EtsiKey[] }>('POST', `/api/v1/keys/${encodeURIComponent(id)}/dec_keys`, {
      key_IDs: keyIds.map((key_ID) => ({ key_ID })),
    });
    return res.keys;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
