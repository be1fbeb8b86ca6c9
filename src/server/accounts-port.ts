// What the entropy routes need from accounts and tokens, in the order the checks run
// (401, then 429 and 403 together). The daemon adapts src/accounts' AccountStore to this;
// tests and benchmarks can too.

export type Authentication =
  | { ok: true; tokenId: string; accountId: string }
  | { ok: false; reason: 'malformed' | 'unknown' | 'expired' | 'revoked' };

export type AuthenticatedToken = Extract<Authentication, { ok: true }>;

export type Admission =
  | { ok: true; release(): Promise<void> }
  | { ok: false; refusal: 'rate-limit'; retryAfterMs: number }
  | { ok: false; refusal: 'allotment'; remaining: number; resetsAt?: number };

export interface EntropyAccounts {
  authenticate(token: string, now: number): Promise<Authentication>;
  /**
   * The 429 and 403 checks, in that order: records this request in the token's 10-second
   * window and refuses it if the window is full (nothing recorded); then atomically
   * charges `bytes` to the account's allotment for the current period, or refuses without
   * charging anything when that would exceed it. Committed durably on return; `release`
   * gives the bytes back (503).
   */
  admit(auth: AuthenticatedToken, bytes: number, now: number): Promise<Admission>;
}
