// Tokens the serving process has already looked up, so the 401 check of a request needs no
// database query: on the SQLite engine that query was the largest single cost of a size=1
// request. Only where the database can say cheaply that another process changed it
// (Db.externalChangeMark: SQLite's data_version); on PostgreSQL other instances revoke
// tokens at any time, so every request asks the database.
//
// Never stale past a change the process can see:
// - another process commits anything (`qentropy token revoke`, `account set`, ...): the
//   mark moves and the whole cache is dropped at the next lookup;
// - this process revokes a token or changes an account: AccountStore calls `invalidate`
//   once the write is in, and a lookup that read the database before cannot store its
//   answer. (A new token needs nothing: unknown tokens are never cached.)
// Entries are keyed by the token's SHA-256, never the secret, and hold what the row says
// (revoked and expiry times too), so expiry is judged at each request's own time.
import type { Account } from './types.js';

export interface CachedToken {
  tokenId: string;
  account: Account;
  expiresAt: number | null;
  revokedAt: number | null;
}

/** What a lookup must carry from before its query to `store` (see `begin`). */
export interface CacheTicket {
  readonly mark: number;
  readonly generation: number;
}

export class TokenCache {
  private readonly entries = new Map<string, CachedToken>();
  private mark: number | undefined;
  private generation = 0;

  /** @param maxEntries entries kept; the oldest goes first beyond it (one per token in use). */
  constructor(private readonly maxEntries = 65_536) {}

  /**
   * The entry for a token hash, given the database's current external-change mark; a new
   * mark drops everything first.
   */
  get(hashKey: string, mark: number): CachedToken | undefined {
    if (mark !== this.mark) {
      this.entries.clear();
      this.mark = mark;
      return undefined;
    }
    return this.entries.get(hashKey);
  }

  /** Taken before a lookup's query: `store` keeps the answer only if nothing changed since. */
  begin(mark: number): CacheTicket {
    return { mark, generation: this.generation };
  }

  store(hashKey: string, entry: CachedToken, ticket: CacheTicket): void {
    if (ticket.mark !== this.mark || ticket.generation !== this.generation) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(hashKey, entry);
  }

  /** This process revoked a token or changed an account: forget everything, and refuse answers read before. */
  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
