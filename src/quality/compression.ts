// Response compression for the quality listener (the APIs, the page and its assets): brotli
// or gzip, whichever the client accepts (brotli first), with Node's zlib. The page's
// JavaScript, styles and JSON shrink 4-8x, and the spec's bit strings ('0'/'1' text) about
// 8x. Work runs on libuv's thread pool (zlib's async API and streams), never on the event
// loop. Event streams (hijacked, written raw) and raw bits (incompressible) are sent as
// they are.
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export type ContentCoding = 'br' | 'gzip';

/** Smaller bodies are not worth a content coding (headers and framing cost about as much). */
const MIN_BYTES = 1024;

/** Types whose bodies are text and compress well. */
const COMPRESSIBLE = /^(application\/json|text\/(html|css|javascript|plain)|image\/svg\+xml)\b/;

// Brotli quality 5: most of quality 11's gain at a fraction of its CPU, for bodies made per request.
const BROTLI_OPTIONS = {
  params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT },
};
const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/**
 * The coding to use for an Accept-Encoding header (RFC 9110 §12.5.3): br, else gzip, when
 * listed with q > 0 (or matched by `*`); undefined for identity.
 */
export function chooseCoding(acceptEncoding: string | undefined): ContentCoding | undefined {
  if (!acceptEncoding) return undefined;
  const weights = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    weights.set(name.trim(), q === undefined ? 1 : Number(q));
  }
  const accepts = (coding: ContentCoding): boolean => (weights.get(coding) ?? weights.get('*') ?? 0) > 0;
  if (accepts('br')) return 'br';
  if (accepts('gzip')) return 'gzip';
  return undefined;
}

function compressible(reply: FastifyReply): boolean {
  if (reply.statusCode < 200 || reply.statusCode === 204 || reply.statusCode === 304) return false;
  if (reply.getHeader('content-encoding') !== undefined) return false;
  const type = reply.getHeader('content-type');
  return typeof type === 'string' && COMPRESSIBLE.test(type);
}

/**
 * An encoded body is another representation than the identity one, so its validator can
 * only be weak (RFC 9110 §8.8.1); If-None-Match compares weakly, so revalidation still works.
 */
function weakenEtag(reply: FastifyReply): void {
  const etag = reply.getHeader('etag');
  if (typeof etag === 'string' && !etag.startsWith('W/')) reply.header('etag', `W/${etag}`);
}

/** Compresses what the quality app sends, when the client accepts it. */
export function registerCompression(app: FastifyInstance): void {
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (payload === null || payload === undefined || !compressible(reply)) return payload;
    // The answer depends on Accept-Encoding whether or not this one is compressed.
    reply.header('vary', 'accept-encoding');
    const coding = chooseCoding(request.headers['accept-encoding']);
    if (!coding) return payload;
    if (typeof payload === 'string' || Buffer.isBuffer(payload)) {
      if (Buffer.byteLength(payload) < MIN_BYTES) return payload;
      const body = coding === 'br' ? await brotli(payload, BROTLI_OPTIONS) : await gzip(payload);
      reply.header('content-encoding', coding).header('content-length', String(body.length));
      weakenEtag(reply);
      return body;
    }
    if (payload instanceof Readable) {
      // Streamed (records with their bits): compressed as it is read, at the client's pace.
      reply.header('content-encoding', coding).removeHeader('content-length');
      const encoder = coding === 'br' ? zlib.createBrotliCompress(BROTLI_OPTIONS) : zlib.createGzip();
      payload.on('error', (err) => encoder.destroy(err));
      return payload.pipe(encoder);
    }
    return payload;
  });
}
