// The accounts API the entropy server codes against (docs/accounts.md).
import type { Period } from './period.js';

export interface Account {
  id: number;
  name: string;
  /** Bytes the account may take per period; null = unlimited. */
  allotmentBytes: number | null;
  period: Period;
  /** Creation time (ms since the epoch); also the anchor of its periods (month start day, hours:N). */
  createdAt: number;
}

export type AuthFailureReason = 'missing' | 'malformed' | 'unknown' | 'expired' | 'revoked';

export type AuthResult =
  | { ok: true; account: Account; tokenId: string }
  | { ok: false; reason: AuthFailureReason };

export type RateLimitResult = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Bytes held for one request; give it back with `releaseAllotment` if nothing is served. */
export interface Reservation {
  accountId: number;
  bytes: number;
  /** Start of the period the bytes were counted in (a release after a reset still hits it). */
  periodStart: number;
  /** Taken from allotment the serving process holds (held-allotment.ts), and given back there. */
  held?: true;
}

export type ReserveResult =
  | { ok: true; reservation: Reservation }
  | {
      ok: false;
      /** Bytes still available this period (null when unlimited: never refused for allotment). */
      remaining: number;
      /** When the allotment resets (ms since the epoch). */
      resetsAt: number;
    };

/**
 * The outcome of `admit`: the request passed the rate limit and its bytes are reserved, or
 * it was refused by the rate limit (429; nothing recorded, nothing reserved) or by the
 * allotment (403; counted in the rate window like any request that passed it, nothing
 * reserved).
 */
export type AdmitResult =
  | { ok: true; reservation: Reservation }
  | { ok: false; refusal: 'rate-limit'; retryAfterSeconds: number }
  | { ok: false; refusal: 'allotment'; remaining: number; resetsAt: number };

export interface Usage {
  periodStart: number;
  resetsAt: number;
  usedBytes: number;
  allotmentBytes: number | null;
  /** null when the allotment is unlimited. */
  remainingBytes: number | null;
}

export interface TokenInfo {
  id: string;
  accountId: number;
  accountName: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
}

export interface CreatedToken {
  /** The secret, `qe_...`: shown once, never stored. */
  token: string;
  info: TokenInfo;
}

export interface RateLimitSettings {
  /** Requests allowed inside any window (default 30). */
  requests: number;
  /** Window length in ms (default 10,000). */
  windowMs: number;
}
