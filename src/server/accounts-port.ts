// What the entropy routes need from accounts and tokens, in the order the checks run
// (401, 429, 403). The daemon adapts src/accounts' AccountStore to this; tests can too.

export type Authentication =
  | { ok: true; tokenId: string; accountId: string }
  | { ok: false; reason: 'malformed' | 'unknown' | 'expired' | 'revoked' };

export interface RateDecision {
  allowed: boolean;
  /** When not allowed: how long until a request would be accepted again. */
  retryAfterMs: number;
}

export type AllotmentReservation =
  | { ok: true; release(): Promise<void> }
  | { ok: false; remaining: number; resetsAt?: number };

export interface EntropyAccounts {
  authenticate(token: string, now: number): Promise<Authentication>;
  /** Records this request in the token's 10-second window and says whether it may proceed. */
  rateLimit(tokenId: string, now: number): Promise<RateDecision>;
  /**
   * Atomically charges `bytes` to the account's allotment for the current period, or
   * refuses without charging anything when that would exceed it. Committed on return.
   */
  reserve(accountId: string, bytes: number, now: number): Promise<AllotmentReservation>;
}
