// Schema of the accounts namespace. Released migrations are never edited: append.
import type { Migration } from '../storage/db.js';

export const ACCOUNTS_NAMESPACE = 'accounts';

export const ACCOUNTS_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE accounts (
     id {{AUTO_ID}},
     name TEXT NOT NULL UNIQUE,
     allotment_bytes BIGINT,            -- NULL: unlimited
     period TEXT NOT NULL,              -- month | day | hours:N
     created_at BIGINT NOT NULL         -- ms since the epoch; anchor of the periods
   );
   CREATE TABLE tokens (
     id TEXT PRIMARY KEY,               -- public id (tok_...), never the secret
     account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
     lookup TEXT NOT NULL,              -- hex of the first 8 bytes of the hash
     hash {{BYTES}} NOT NULL,           -- SHA-256 of the token
     created_at BIGINT NOT NULL,
     expires_at BIGINT,
     revoked_at BIGINT
   );
   CREATE INDEX tokens_lookup ON tokens (lookup);
   CREATE TABLE allotment_usage (
     account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
     period_start BIGINT NOT NULL,
     used_bytes BIGINT NOT NULL,
     PRIMARY KEY (account_id, period_start)
   );
   CREATE INDEX allotment_usage_period ON allotment_usage (period_start);`,
  // Rate-limit windows: one row per token holding the times (ms) of its requests inside the
  // window, oldest first, and a version for compare-and-swap updates. On PostgreSQL the
  // table is UNLOGGED: no WAL and no fsync per request; a crash empties it, which only
  // forgets the last 10 s of request times.
  (engine) => `
   CREATE ${engine === 'postgres' ? 'UNLOGGED ' : ''}TABLE rate_windows (
     token_id TEXT PRIMARY KEY,
     stamps TEXT NOT NULL,
     version BIGINT NOT NULL
   )`,
  // Allotment the serving process has charged in advance and not served yet
  // (held-allotment.ts; SQLite only, always 0 on PostgreSQL). Reservations count it as taken.
  `ALTER TABLE allotment_usage ADD COLUMN held_bytes BIGINT NOT NULL DEFAULT 0`,
];
