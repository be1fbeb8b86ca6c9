// Accounts and access tokens of the entropy service (docs/accounts.md).
//
// The server's per-request sequence (check order 400, 401, 429, 403, 503):
//   const auth = await store.authenticate(parseBearer(req.headers.authorization) ...);   // 401
//   const rl = await store.rateLimit(auth.tokenId);                                       // 429
//   const r = await store.reserveAllotment(auth.account, bytes);                          // 403
//   const data = pool.take(bytes); if (!data) await store.releaseAllotment(r.reservation); // 503
// or, the two middle steps in one group-committed transaction (what the server does):
//   const a = await store.admit(auth.tokenId, auth.account, bytes);                       // 429, 403
export { AccountStore, validateAccountName, type AccountStoreOptions, type NewAccount } from './store.js';
export { formatPeriod, parsePeriod, periodWindow, type Period, type PeriodWindow } from './period.js';
export { parseBearer, type BearerResult } from './token.js';
export type {
  Account,
  AdmitResult,
  AuthFailureReason,
  AuthResult,
  CreatedToken,
  RateLimitResult,
  RateLimitSettings,
  Reservation,
  ReserveResult,
  TokenInfo,
  Usage,
} from './types.js';
