// Access tokens: 256 random bits shown once as `qe_<base64url>`, kept only as SHA-256.
import crypto from 'node:crypto';

export const TOKEN_PREFIX = 'qe_';
const TOKEN_BYTES = 32;
/** 32 bytes in unpadded base64url are exactly 43 characters. */
const TOKEN_PATTERN = /^qe_[A-Za-z0-9_-]{43}$/;
/** Bytes of the hash used as the (non-secret) lookup key; the full hash is then compared. */
const LOOKUP_BYTES = 8;

export interface NewTokenSecret {
  /** The token to hand to the user, once. */
  secret: string;
  hash: Buffer;
  lookup: string;
}

export function generateToken(): NewTokenSecret {
  const secret = TOKEN_PREFIX + crypto.randomBytes(TOKEN_BYTES).toString('base64url');
  const hash = hashToken(secret);
  return { secret, hash, lookup: lookupKey(hash) };
}

/** Public identifier of a token, for listing and revoking without the secret. */
export function generateTokenId(): string {
  return `tok_${crypto.randomBytes(9).toString('base64url')}`;
}

export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

export function hashToken(token: string): Buffer {
  return crypto.createHash('sha256').update(token, 'utf8').digest();
}

export function lookupKey(hash: Buffer): string {
  return hash.subarray(0, LOOKUP_BYTES).toString('hex');
}

/** Constant-time equality of two SHA-256 digests. */
export function hashesEqual(a: Buffer, b: Buffer): boolean {
  if (a.length !== b.length) return false;
  return crypto.timingSafeEqual(a, b);
}

export type BearerResult = { ok: true; token: string } | { ok: false; reason: 'missing' | 'malformed' };

/**
 * Extracts the token from an `Authorization` header value: `Bearer <token>` (scheme case
 * insensitive, as RFC 7235 says). No header is 'missing'; anything else unusable is 'malformed'.
 */
export function parseBearer(header: string | undefined): BearerResult {
  if (header === undefined || header.trim() === '') return { ok: false, reason: 'missing' };
  const m = /^Bearer +(\S+) *$/i.exec(header);
  if (!m) return { ok: false, reason: 'malformed' };
  return { ok: true, token: m[1]! };
}
