// Strict reading of the entropy request (spec: `size` optional integer 1..512, default 1).
// Anything else is a 400 with a detail that names the problem: a repeated `size`, an
// unknown parameter, a value that is not a plain decimal integer in range.
import { ApiError, unauthorized } from './errors.js';

export const MAX_BLOCKS = 512;
const DECIMAL = /^[0-9]+$/;

export function parseSize(query: unknown): number {
  const params = (query ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(params).filter((key) => key !== 'size');
  if (unknown.length > 0) {
    throw new ApiError(400, 'unknown query parameter', unknown.map((name) => ({ parameter: name.slice(0, 64), problem: 'not accepted' })));
  }
  const raw = params.size;
  if (raw === undefined) return 1;
  if (Array.isArray(raw)) {
    throw new ApiError(400, 'size given more than once', [{ parameter: 'size', problem: 'repeated' }]);
  }
  const text = String(raw);
  if (!DECIMAL.test(text) || text.length > 3) {
    throw new ApiError(400, 'size must be an integer from 1 to 512', [
      { parameter: 'size', problem: 'not an integer from 1 to 512', value: text.slice(0, 32) },
    ]);
  }
  const size = Number(text);
  if (size < 1 || size > MAX_BLOCKS) {
    throw new ApiError(400, 'size must be an integer from 1 to 512', [
      { parameter: 'size', problem: 'out of range 1..512', value: text },
    ]);
  }
  return size;
}

/** The token of `Authorization: Bearer <token>`, or a 401 naming what is wrong. */
export function bearerToken(header: string | undefined): string {
  if (header === undefined || header === '') {
    throw unauthorized('access token required', [{ header: 'Authorization', problem: 'missing' }], false);
  }
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (!match) {
    // `Bearer <junk>` gave a token (a malformed one); another scheme gave none.
    throw unauthorized('access token malformed', [{ header: 'Authorization', problem: 'expected "Bearer <token>"' }], /^Bearer\s+\S/i.test(header));
  }
  return match[1]!;
}

/** Whether an Accept header allows a JSON answer (absent means anything goes). */
export function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return accept.split(',').some((part) => {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q !== undefined && Number(q.slice(2)) === 0) return false;
    return type === 'application/json' || type === 'application/*' || type === '*/*';
  });
}
