// The entropy client: speaks the spec's GET /api/v1/quantum-entropy exactly, so it works
// against our server and the provider's. Every block is validated by the native decoder
// (strict base64, exactly 1,024 bytes each, `size` equal to the array length).
import { decodeApplianceResponse, decodeEntropyResponse, decodeEntropyResponseInto } from '../native/codec.js';
import { classifyStatus, describeStatus, EntropyClientError, parseRetryAfter } from './errors.js';
import { RetryPolicy, sleep, type RetryPolicyOptions } from './retry.js';
import { HttpTransport, TransportError } from './transport.js';
import type { TlsLog } from '../pqtls/index.js';

export const BLOCK_SIZE = 1024;
export const MAX_BLOCKS = 512;
const ENDPOINT = '/api/v1/quantum-entropy';
const APPLIANCE_ENDPOINT = '/api/v1/entropy';
const SILENT_TLS_LOG: TlsLog = { debug: () => undefined, warn: () => undefined };

export interface EntropyClientOptions {
  /** The service's base address (`https://host[:port]`) or the full endpoint URL. */
  url: string;
  token: string;
  /** Per-request time limit (default 30 s). */
  timeoutMs?: number;
  /** PEM CA certificate(s) to trust instead of the system store (private deployments, tests). */
  ca?: string | Buffer;
  /** TLS key-exchange groups, in order of preference (default: the runtime's, hybrid first where it has ML-KEM). */
  tlsGroups?: string;
  /** Where each connection's negotiated group is logged (debug level); default nowhere. */
  tlsLog?: TlsLog;
  /** Keep-alive connections per origin (default 4). */
  connections?: number;
  retry?: RetryPolicyOptions;
  /** Called before each wait, for logs. */
  onRetry?: (info: { error: EntropyClientError; delayMs: number; attempt: number }) => void;
}

export interface RequestOptions {
  signal?: AbortSignal;
  /**
   * The buffer to decode the blocks into (asked for once the body has arrived, with the
   * byte length wanted), instead of a new one: a caller that recycles its buffers spares
   * the garbage collector half a megabyte per 512-block response.
   */
  into?: (bytes: number) => Buffer;
}

/** Resolves the endpoint URL from a base address or a full endpoint URL. */
export function entropyEndpoint(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new EntropyClientError(`invalid URL '${url}'`, 'fatal');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new EntropyClientError(`URL '${url}' must be https:// (or http:// for a local test server)`, 'fatal');
  }
  if (!parsed.pathname.endsWith(ENDPOINT)) {
    parsed.pathname = parsed.pathname.replace(/\/+$/, '') + ENDPOINT;
  }
  parsed.search = '';
  return parsed;
}

export class EntropyClient {
  private readonly endpoint: URL;
  private readonly transport: HttpTransport;
  readonly policy: RetryPolicy;

  constructor(private readonly options: EntropyClientOptions) {
    this.endpoint = entropyEndpoint(options.url);
    if (!/^[\x21-\x7e]+$/.test(options.token)) {
      throw new EntropyClientError('access token is empty or has characters a header cannot carry', 'fatal');
    }
    this.policy = new RetryPolicy(options.retry);
    this.transport = new HttpTransport({
      connections: options.connections ?? 4,
      timeoutMs: options.timeoutMs ?? 30_000,
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
      ...(options.tlsGroups !== undefined ? { tlsGroups: options.tlsGroups } : {}),
      tlsWatch: { face: 'upstream', log: options.tlsLog ?? SILENT_TLS_LOG },
    });
  }

  /** One request, no retry: `size` blocks (1..512) as one Buffer, or an EntropyClientError. */
  async fetchOnce(size: number, options: RequestOptions = {}): Promise<Buffer> {
    if (!Number.isInteger(size) || size < 1 || size > MAX_BLOCKS) {
      throw new EntropyClientError(`size must be an integer from 1 to ${MAX_BLOCKS}`, 'fatal');
    }
    const url = new URL(this.endpoint);
    url.searchParams.set('size', String(size));
    const body = await this.send(url, 'GET', size * BLOCK_SIZE, size, options);
    let data: Buffer;
    try {
      data = options.into ? decodeInto(body, options.into(size * BLOCK_SIZE)) : decodeEntropyResponse(body);
    } catch (err) {
      throw invalidResponse(body, err);
    } finally {
      this.transport.release(body); // the bytes, base64-encoded: erased once decoded (or refused)
    }
    if (data.length !== size * BLOCK_SIZE) {
      data.fill(0);
      throw new EntropyClientError(
        `invalid entropy response: asked for ${size} blocks, got ${data.length / BLOCK_SIZE}`,
        'transient',
        200,
      );
    }
    return data;
  }

  /**
   * One request to the appliance face (`POST /api/v1/entropy`), no retry: `blockCount`
   * blocks of `blockSize` bytes, concatenated, every block checked by the native decoder.
   */
  async fetchApplianceOnce(blockSize: number, blockCount: number, options: RequestOptions = {}): Promise<Buffer> {
    if (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > 1024) {
      throw new EntropyClientError('block_size must be an integer from 1 to 1024', 'fatal');
    }
    if (!Number.isInteger(blockCount) || blockCount < 1 || blockCount > MAX_BLOCKS) {
      throw new EntropyClientError(`block_count must be an integer from 1 to ${MAX_BLOCKS}`, 'fatal');
    }
    const url = new URL(this.endpoint);
    url.pathname = url.pathname.slice(0, -ENDPOINT.length) + APPLIANCE_ENDPOINT;
    const body = await this.send(url, 'POST', blockSize * blockCount, blockCount, options, JSON.stringify({ block_size: blockSize, block_count: blockCount }));
    try {
      return decodeApplianceResponse(body, { blockSize, blockCount }).data;
    } catch (err) {
      throw invalidResponse(body, err);
    } finally {
      this.transport.release(body);
    }
  }

  /** `size` blocks, retrying per the policy; rejects with the error the policy gave up on. */
  async fetch(size: number, options: RequestOptions = {}): Promise<Buffer> {
    for (;;) {
      try {
        const data = await this.fetchOnce(size, options);
        this.policy.succeeded();
        return data;
      } catch (err) {
        // Called off: not a failure of the server's, so neither retried nor counted.
        if (options.signal?.aborted) throw err;
        const delay = this.policy.nextDelay(err);
        if (delay === undefined) throw err;
        this.options.onRetry?.({
          error: err as EntropyClientError,
          delayMs: delay,
          attempt: this.policy.consecutiveFailures,
        });
        await sleep(delay, options.signal);
      }
    }
  }

  /** Sends one request; resolves to the 200 body or rejects with a classified error. */
  private async send(
    url: URL,
    method: 'GET' | 'POST',
    bytes: number,
    blocks: number,
    options: RequestOptions,
    json?: string,
  ): Promise<Buffer> {
    // Body cap for a 200: base64 of the bytes (4/3, and per-block quotes) plus JSON punctuation.
    const limit = Math.ceil(bytes / 3) * 4 + 8 * blocks + 4096;
    let response;
    try {
      response = await this.transport.request(url, {
        method,
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${this.options.token}`,
          ...(json !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(json !== undefined ? { body: json } : {}),
        bodyLimit: (status) => (status === 200 ? limit : 64 * 1024),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (err instanceof TransportError && err.phase === 'response') {
        throw new EntropyClientError(`reading the response failed: ${err.message}`, 'transient', err.status);
      }
      throw new EntropyClientError(`request to ${url.origin} failed: ${(err as Error).message}`, 'transient');
    }
    if (response.statusCode !== 200) {
      const error = statusError(response.statusCode, response.headers['retry-after'], response.body);
      this.transport.release(response.body);
      throw error;
    }
    return response.body;
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

function statusError(status: number, retryAfter: string | string[] | undefined, body: Buffer): EntropyClientError {
  let message: string | undefined;
  let details: unknown[] | undefined;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { message?: unknown; details?: unknown };
    if (typeof parsed.message === 'string') message = parsed.message.slice(0, 300);
    if (Array.isArray(parsed.details)) details = parsed.details;
  } catch {
    // not our error shape: the status alone says enough
  }
  const retryAfterMs = parseRetryAfter(retryAfter);
  return new EntropyClientError(describeStatus(status, message, retryAfterMs), classifyStatus(status), status, retryAfterMs, details);
}

/** The blocks of `body` decoded into `target`; on a refusal the target is erased (it may hold part of them). */
function decodeInto(body: Buffer, target: Buffer): Buffer {
  try {
    const n = decodeEntropyResponseInto(body, target);
    return n === target.length ? target : target.subarray(0, n);
  } catch (err) {
    target.fill(0);
    throw err;
  }
}

/**
 * The error for a 200 body the decoder refused. The decoder checks blocks as it meets
 * them, so a body cut off after `{"random": ["AAAA", ` was reported as a 3-byte block;
 * when the body is not JSON at all, that is what the message says. (JSON.parse runs only
 * on this error path, never on the bodies that decode.)
 */
function invalidResponse(body: Buffer, err: unknown): EntropyClientError {
  let why = (err as Error).message;
  try {
    JSON.parse(body.toString('utf8'));
  } catch (parseError) {
    why = `not valid JSON (${(parseError as Error).message}; ${body.length} bytes received)`;
  }
  return new EntropyClientError(`invalid entropy response: ${why}`, 'transient', 200);
}

/** One-shot helper: fetches `size` blocks (default 1) with the retry policy and closes. */
export async function fetchEntropy(
  options: EntropyClientOptions & { size?: number; signal?: AbortSignal },
): Promise<Buffer> {
  const client = new EntropyClient(options);
  try {
    return await client.fetch(options.size ?? 1, options.signal ? { signal: options.signal } : {});
  } finally {
    await client.close();
  }
}

/**
 * An endless (or `totalBytes`-long) stream of entropy as Buffers, fetched `blocksPerRequest`
 * blocks at a time with the retry policy. Stops when aborted or when the policy gives up.
 */
export async function* entropyStream(
  options: EntropyClientOptions & { blocksPerRequest?: number; totalBytes?: number; signal?: AbortSignal },
): AsyncGenerator<Buffer, void, undefined> {
  const client = new EntropyClient(options);
  const perRequest = options.blocksPerRequest ?? 64;
  let remaining = options.totalBytes ?? Number.POSITIVE_INFINITY;
  try {
    while (remaining > 0) {
      const blocks = Math.min(perRequest, Math.ceil(remaining / BLOCK_SIZE));
      const data = await client.fetch(blocks, options.signal ? { signal: options.signal } : {});
      const out = remaining < data.length ? data.subarray(0, remaining) : data;
      remaining -= out.length;
      yield out;
    }
  } finally {
    await client.close();
  }
}
