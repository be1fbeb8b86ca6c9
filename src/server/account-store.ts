// Adapts src/accounts' AccountStore (SQLite or PostgreSQL) to what the routes need.
import type { AccountStore } from '../accounts/index.js';
import type { AllotmentReservation, Authentication, EntropyAccounts, RateDecision } from './accounts-port.js';

export function accountsFromStore(store: AccountStore): EntropyAccounts {
  return {
    async authenticate(token: string, now: number): Promise<Authentication> {
      const result = await store.authenticate(token, now);
      if (result.ok) return { ok: true, tokenId: result.tokenId, accountId: String(result.account.id) };
      // 'missing' cannot happen here (the route checked the header); treat it as malformed.
      return { ok: false, reason: result.reason === 'missing' ? 'malformed' : result.reason };
    },
    async rateLimit(tokenId: string, now: number): Promise<RateDecision> {
      const result = await store.rateLimit(tokenId, now);
      return result.allowed ? { allowed: true, retryAfterMs: 0 } : { allowed: false, retryAfterMs: result.retryAfterSeconds * 1000 };
    },
    async reserve(accountId: string, bytes: number, now: number): Promise<AllotmentReservation> {
      const result = await store.reserveAllotment(Number(accountId), bytes, now);
      if (!result.ok) return { ok: false, remaining: result.remaining, resetsAt: result.resetsAt };
      const { reservation } = result;
      return { ok: true, release: () => store.releaseAllotment(reservation) };
    },
  };
}
