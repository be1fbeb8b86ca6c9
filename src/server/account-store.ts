// Adapts src/accounts' AccountStore (SQLite or PostgreSQL) to what the routes need.
import type { Account, AccountStore } from '../accounts/index.js';
import type { Admission, AuthenticatedToken, Authentication, EntropyAccounts } from './accounts-port.js';

export function accountsFromStore(store: AccountStore): EntropyAccounts {
  // The account each successful authentication found, so `admit` need not look it up again.
  const accountOf = new WeakMap<AuthenticatedToken, Account>();
  return {
    async authenticate(token: string, now: number): Promise<Authentication> {
      const result = await store.authenticate(token, now);
      if (!result.ok) {
        // 'missing' cannot happen here (the route checked the header); treat it as malformed.
        return { ok: false, reason: result.reason === 'missing' ? 'malformed' : result.reason };
      }
      const auth: AuthenticatedToken = { ok: true, tokenId: result.tokenId, accountId: String(result.account.id) };
      accountOf.set(auth, result.account);
      return auth;
    },
    async admit(auth: AuthenticatedToken, bytes: number, now: number): Promise<Admission> {
      const account = accountOf.get(auth) ?? (await store.getAccountById(Number(auth.accountId)));
      if (!account) throw new Error(`account ${auth.accountId} does not exist`);
      const result = await store.admit(auth.tokenId, account, bytes, now);
      if (result.ok) {
        const { reservation } = result;
        return { ok: true, release: () => store.releaseAllotment(reservation) };
      }
      if (result.refusal === 'rate-limit') return { ok: false, refusal: 'rate-limit', retryAfterMs: result.retryAfterSeconds * 1000 };
      return { ok: false, refusal: 'allotment', remaining: result.remaining, resetsAt: result.resetsAt };
    },
  };
}
