// Accounts, tokens, allotment usage and rate-limit windows, in the shared database so
// several server instances on one PostgreSQL agree on all of them. On SQLite, which one
// process serves (storage/instance-lock.ts), the rate windows and a cache of looked-up
// tokens live in that process instead (rate-windows.ts, token-cache.ts); usage, which
// matters, is in the database on both.
import crypto from 'node:crypto';

import { CommitBatcher } from '../storage/batch.js';
import type { Db, Queryable } from '../storage/db.js';
import { HeldAllotment, type HeldAllotmentOptions } from './held-allotment.js';
import { checkRateWindows, LocalRateWindows, type RateCheck } from './rate-windows.js';
import { ACCOUNTS_MIGRATIONS, ACCOUNTS_NAMESPACE } from './migrations.js';
import { formatPeriod, parsePeriod, periodWindow, type Period, type PeriodWindow } from './period.js';
import { TokenCache, type CachedToken } from './token-cache.js';
import { readAllotmentRow } from './usage-row.js';
import { generateToken, generateTokenId, hashesEqual, hashToken, isWellFormedToken, lookupKey } from './token.js';
import type {
  Account,
  AdmitResult,
  AuthResult,
  CreatedToken,
  RateLimitResult,
  RateLimitSettings,
  Reservation,
  ReserveResult,
  TokenInfo,
  Usage,
} from './types.js';

export interface AccountStoreOptions {
  /** Current time in ms since the epoch (tests inject one). Default Date.now. */
  clock?: () => number;
  rateLimit?: Partial<RateLimitSettings>;
}

export interface NewAccount {
  name: string;
  /** null or omitted: unlimited. */
  allotmentBytes?: number | null;
  /** Default month. */
  period?: Period;
  /** Creation time and period anchor; default now. */
  createdAt?: number;
}

interface AccountRow {
  id: number;
  name: string;
  allotment_bytes: number | null;
  period: string;
  created_at: number;
}

interface TokenRow {
  id: string;
  account_id: number;
  hash: Buffer;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

const ACCOUNT_COLUMNS = 'a.id, a.name, a.allotment_bytes, a.period, a.created_at';
/** Compared against when no token matches, so a miss costs the same comparison as a hit. */
const DUMMY_HASH = crypto.createHash('sha256').update('qentropy: no such token').digest();
const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    name: row.name,
    allotmentBytes: row.allotment_bytes,
    period: parsePeriod(row.period),
    createdAt: row.created_at,
  };
}

/** The 401 decision for a found token at time `now`. */
function judge(token: CachedToken, now: number): AuthResult {
  if (token.revokedAt !== null) return { ok: false, reason: 'revoked' };
  if (token.expiresAt !== null && now >= token.expiresAt) return { ok: false, reason: 'expired' };
  return { ok: true, account: token.account, tokenId: token.tokenId };
}

function toTokenInfo(row: TokenRow & { account_name: string }): TokenInfo {
  return {
    id: row.id,
    accountId: row.account_id,
    accountName: row.account_name,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

export function validateAccountName(name: string): void {
  if (!ACCOUNT_NAME.test(name)) {
    throw new Error(`account name '${name}': use 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit`);
  }
}

function validateAllotment(bytes: number | null | undefined): void {
  if (bytes === null || bytes === undefined) return;
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new Error(`allotment ${bytes}: expected a whole number of bytes >= 0`);
}

interface ReserveRequest {
  account: Account;
  bytes: number;
  window: PeriodWindow;
}

interface AdmitRequest extends ReserveRequest {
  tokenId: string;
  now: number;
}

/** The requests' indices grouped by account and period, groups in account order. */
function groupByAccountPeriod(requests: readonly ReserveRequest[]): number[][] {
  const groups = new Map<string, number[]>();
  requests.forEach((r, i) => {
    const key = `${r.account.id}:${r.window.start}`;
    const group = groups.get(key);
    if (group) group.push(i);
    else groups.set(key, [i]);
  });
  return [...groups.values()].sort((a, b) => requests[a[0]!]!.account.id - requests[b[0]!]!.account.id);
}

/**
 * What the stores on one SQLite database share in their process (Db.connectionState): the
 * one serving process keeps the rate windows and known tokens here rather than in the file.
 */
interface ProcessLocal {
  windows: LocalRateWindows;
  tokens: TokenCache;
  /** Allotment charged ahead, while this process serves (`startServing`): one per database. */
  held: { allotment: Promise<HeldAllotment> | undefined; servers: number };
}

export class AccountStore {
  private readonly clock: () => number;
  /** Set on SQLite (one serving process); undefined on PostgreSQL (several instances). */
  private readonly local: ProcessLocal | undefined;
  private readonly rate: RateLimitSettings;
  private readonly reserveBatcher: CommitBatcher<ReserveRequest, ReserveResult>;
  private readonly admitBatcher: CommitBatcher<AdmitRequest, AdmitResult>;
  private readonly rateBatcher: CommitBatcher<RateCheck, RateLimitResult>;

  private constructor(
    readonly db: Db,
    options: AccountStoreOptions,
  ) {
    this.clock = options.clock ?? Date.now;
    this.rate = { requests: options.rateLimit?.requests ?? 30, windowMs: options.rateLimit?.windowMs ?? 10_000 };
    // Requests of one event-loop turn share a transaction and its one durable commit.
    this.reserveBatcher = new CommitBatcher(db, { batch: (tx, requests) => this.reserveAllIn(tx, requests) });
    this.admitBatcher = new CommitBatcher(db, { batch: (tx, requests) => this.admitAll(tx, requests) });
    // A rate-window write lost in a power cut is harmless, so these commits skip the flush.
    this.rateBatcher = new CommitBatcher(db, { batch: (tx, checks) => checkRateWindows(tx, checks, this.rate) }, { durable: false });
    this.local =
      db.engine === 'sqlite'
        ? db.connectionState<ProcessLocal>('accounts', () => ({
            windows: new LocalRateWindows(),
            tokens: new TokenCache(),
            held: { allotment: undefined, servers: 0 },
          }))
        : undefined;
  }

  /** Brings the schema up to date and returns a store on `db` (the caller keeps owning `db`). */
  static async open(db: Db, options: AccountStoreOptions = {}): Promise<AccountStore> {
    await db.migrate(ACCOUNTS_NAMESPACE, ACCOUNTS_MIGRATIONS);
    return new AccountStore(db, options);
  }

  // ---- accounts ------------------------------------------------------------------

  async createAccount(spec: NewAccount): Promise<Account> {
    validateAccountName(spec.name);
    validateAllotment(spec.allotmentBytes);
    const createdAt = spec.createdAt ?? this.clock();
    const rows = await this.db.query<{ id: number }>(
      'INSERT INTO accounts (name, allotment_bytes, period, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING RETURNING id',
      [spec.name, spec.allotmentBytes ?? null, formatPeriod(spec.period ?? { kind: 'month' }), createdAt],
    );
    if (rows.length === 0) throw new Error(`account '${spec.name}' already exists`);
    return (await this.getAccountById(rows[0]!.id))!;
  }

  async getAccount(name: string): Promise<Account | undefined> {
    const [row] = await this.db.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.name = $1`, [name]);
    return row ? toAccount(row) : undefined;
  }

  async getAccountById(id: number): Promise<Account | undefined> {
    const [row] = await this.db.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = $1`, [id]);
    return row ? toAccount(row) : undefined;
  }

  async listAccounts(): Promise<Account[]> {
    const rows = await this.db.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a ORDER BY a.name`);
    return rows.map(toAccount);
  }

  /** Changes an account's allotment and/or period (usage so far in the current period stays). */
  async updateAccount(id: number, change: { allotmentBytes?: number | null; period?: Period }): Promise<Account> {
    validateAllotment(change.allotmentBytes);
    if (change.allotmentBytes !== undefined) {
      await this.db.execute('UPDATE accounts SET allotment_bytes = $1 WHERE id = $2', [change.allotmentBytes, id]);
    }
    if (change.period !== undefined) {
      await this.db.execute('UPDATE accounts SET period = $1 WHERE id = $2', [formatPeriod(change.period), id]);
    }
    this.local?.tokens.invalidate();
    const account = await this.getAccountById(id);
    if (!account) throw new Error(`account ${id} does not exist`);
    return account;
  }

  // ---- tokens --------------------------------------------------------------------

  /** Makes a new token for the account; the secret is in the result and nowhere else. */
  async createToken(accountId: number, options: { expiresAt?: number | null } = {}): Promise<CreatedToken> {
    const account = await this.getAccountById(accountId);
    if (!account) throw new Error(`account ${accountId} does not exist`);
    const { secret, hash, lookup } = generateToken();
    const id = generateTokenId();
    const createdAt = this.clock();
    const expiresAt = options.expiresAt ?? null;
    await this.db.execute(
      'INSERT INTO tokens (id, account_id, lookup, hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [id, accountId, lookup, hash, createdAt, expiresAt],
    );
    return {
      token: secret,
      info: { id, accountId, accountName: account.name, createdAt, expiresAt, revokedAt: null },
    };
  }

  async listTokens(): Promise<TokenInfo[]> {
    const rows = await this.db.query<TokenRow & { account_name: string }>(
      'SELECT t.id, t.account_id, t.created_at, t.expires_at, t.revoked_at, a.name AS account_name FROM tokens t JOIN accounts a ON a.id = t.account_id ORDER BY t.created_at, t.id',
    );
    return rows.map(toTokenInfo);
  }

  /** Revokes a token by id. Returns false when no such token exists; revoking twice keeps the first time. */
  async revokeToken(tokenId: string): Promise<boolean> {
    const changed = await this.db.execute('UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2', [
      this.clock(),
      tokenId,
    ]);
    this.local?.tokens.invalidate();
    return changed > 0;
  }

  /**
   * Checks a bearer token. The secret is only ever hashed; the stored hash is found by a
   * non-secret prefix of it and compared in full with crypto.timingSafeEqual, and a miss
   * runs the same comparison against a dummy, so timing does not depend on the secret.
   */
  async authenticate(token: string | undefined, now: number = this.clock()): Promise<AuthResult> {
    if (token === undefined || token === '') return { ok: false, reason: 'missing' };
    if (!isWellFormedToken(token)) return { ok: false, reason: 'malformed' };
    const hash = hashToken(token);
    const cache = this.local?.tokens;
    if (!cache) {
      const found = await this.findToken(hash);
      return found ? judge(found, now) : { ok: false, reason: 'unknown' };
    }
    const key = hash.toString('base64');
    const mark = this.db.externalChangeMark()!;
    const cached = cache.get(key, mark);
    if (cached) return judge(cached, now);
    const ticket = cache.begin(mark);
    const found = await this.findToken(hash);
    if (!found) return { ok: false, reason: 'unknown' };
    cache.store(key, found, ticket);
    return judge(found, now);
  }

  /**
   * The token row whose hash is `hash`, found by a non-secret prefix of it and compared in
   * full in constant time; a miss runs the same comparison against a dummy.
   */
  private async findToken(hash: Buffer): Promise<CachedToken | undefined> {
    const candidates = await this.db.query<TokenRow & AccountRow & { token_id: string }>(
      `SELECT t.id AS token_id, t.hash, t.expires_at, t.revoked_at, ${ACCOUNT_COLUMNS}
         FROM tokens t JOIN accounts a ON a.id = t.account_id WHERE t.lookup = $1`,
      [lookupKey(hash)],
    );
    let match: (typeof candidates)[number] | undefined;
    for (const row of candidates) {
      if (hashesEqual(Buffer.from(row.hash), hash)) match = row;
    }
    if (candidates.length === 0) hashesEqual(DUMMY_HASH, hash);
    if (!match) return undefined;
    return { tokenId: match.token_id, account: toAccount(match), expiresAt: match.expires_at, revokedAt: match.revoked_at };
  }

  // ---- serving -------------------------------------------------------------------

  /**
   * Called by the process that serves entropy from this database, once it holds the
   * database's serving lock (SQLite: storage/instance-lock.ts): from now on `admit` takes
   * allotment from grants charged ahead (held-allotment.ts) instead of one durable commit
   * per request. Counts as used whatever a previous server left held, and returns those
   * bytes (0 when there were none, or on PostgreSQL, where nothing changes). Pair with
   * `stopServing`.
   */
  async startServing(options: HeldAllotmentOptions = {}): Promise<number> {
    const held = this.local?.held;
    if (!held) return 0;
    held.servers++;
    if (held.allotment) return 0;
    const starting = HeldAllotment.start(this.db, this.clock, options);
    held.allotment = starting.then(({ held: allotment }) => allotment);
    try {
      return (await starting).reclaimedBytes;
    } catch (err) {
      held.servers--;
      held.allotment = undefined;
      throw err;
    }
  }

  /** Records what was served and returns the unserved held allotment (when the last server on this database stops). */
  async stopServing(): Promise<void> {
    const held = this.local?.held;
    if (!held?.allotment || --held.servers > 0) return;
    const allotment = await held.allotment;
    held.allotment = undefined;
    await allotment.close();
  }

  /** While serving: moves the bytes served so far from held to used now (tests, reports). */
  async recordServed(): Promise<void> {
    await (await this.heldAllotment())?.recordServed();
  }

  private heldAllotment(): Promise<HeldAllotment> | undefined {
    return this.local?.held.allotment;
  }

  // ---- rate limit ----------------------------------------------------------------

  /**
   * Counts a request in the token's sliding window (rate-windows.ts): allowed when fewer
   * than `requests` (30) allowed requests of this token happened in the last `windowMs`
   * (10 s), i.e. at times t with now - windowMs < t. On PostgreSQL shared through the
   * database, so concurrent requests on any number of instances are counted one by one; on
   * SQLite kept by the one serving process.
   */
  async rateLimit(tokenId: string, now: number = this.clock()): Promise<RateLimitResult> {
    if (this.local) return this.local.windows.check(tokenId, now, this.rate);
    return this.rateBatcher.submit({ tokenId, now });
  }

  // ---- allotment -----------------------------------------------------------------

  /** Usage of the account's current period. */
  async usage(accountId: number, now: number = this.clock()): Promise<Usage> {
    const account = await this.getAccountById(accountId);
    if (!account) throw new Error(`account ${accountId} does not exist`);
    return this.usageOf(this.db, account, now);
  }

  private async usageOf(q: Queryable, account: Account, now: number): Promise<Usage> {
    const window = periodWindow(account.period, account.createdAt, now);
    const row = await readAllotmentRow(q, account.id, window.start);
    // Held bytes are charged but maybe not served. The serving process knows how many it has
    // served (not yet moved to used) and how many are still to serve; others count them as taken.
    const mine = (await this.heldAllotment())?.heldFor(account.id, window.start);
    const used = (row?.usedBytes ?? 0) + (mine?.unmoved ?? 0);
    const taken = (row?.usedBytes ?? 0) + (row?.heldBytes ?? 0) - (mine?.left ?? 0);
    return {
      periodStart: window.start,
      resetsAt: window.end,
      usedBytes: used,
      allotmentBytes: account.allotmentBytes,
      remainingBytes: account.allotmentBytes === null ? null : Math.max(0, account.allotmentBytes - taken),
    };
  }

  /**
   * Takes `bytes` from the account's allotment for the current period if that many
   * remain, atomically (see `reserveIn`), so concurrent requests on any number of
   * instances can never together exceed the allotment. Committed (durably) on return.
   * Serve the bytes after this succeeds; if serving fails (e.g. the pool is short, 503),
   * call `releaseAllotment` so the request takes nothing. Pass the Account from
   * `authenticate` to save a lookup.
   */
  async reserveAllotment(account: number | Account, bytes: number, now: number = this.clock()): Promise<ReserveResult> {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new Error(`cannot reserve ${bytes} bytes`);
    const found = typeof account === 'number' ? await this.getAccountById(account) : account;
    if (!found) throw new Error(`account ${String(account)} does not exist`);
    const request = { account: found, bytes, window: periodWindow(found.period, found.createdAt, now) };
    return this.reserveBatcher.submit(request);
  }

  /**
   * One statement: create the period's row with `bytes` if they fit the allotment, or add
   * them to the existing row if they still fit. The allotment is read inside the
   * statement, and the conflict branch re-checks the row it locked, so concurrent
   * reservations never together exceed it.
   */
  private async reserveIn(q: Queryable, { account, bytes, window }: ReserveRequest): Promise<ReserveResult> {
    const taken = await q.execute(
      `INSERT INTO allotment_usage (account_id, period_start, used_bytes)
         SELECT id, $2, $3 FROM accounts WHERE id = $1 AND (allotment_bytes IS NULL OR $3 <= allotment_bytes)
       ON CONFLICT (account_id, period_start) DO UPDATE SET used_bytes = allotment_usage.used_bytes + excluded.used_bytes
         WHERE allotment_usage.used_bytes + allotment_usage.held_bytes + excluded.used_bytes <=
               COALESCE((SELECT allotment_bytes FROM accounts WHERE id = $1), allotment_usage.used_bytes + allotment_usage.held_bytes + excluded.used_bytes)`,
      [account.id, window.start, bytes],
    );
    if (taken === 1) return { ok: true, reservation: { accountId: account.id, bytes, periodStart: window.start } };
    // Report against the allotment as it is now (it may have changed since `account` was read).
    const row = await readAllotmentRow(q, account.id, window.start);
    const allotment = row?.allotmentBytes ?? account.allotmentBytes ?? 0;
    return { ok: false, remaining: Math.max(0, allotment - (row?.usedBytes ?? 0) - (row?.heldBytes ?? 0)), resetsAt: window.end };
  }

  // ---- rate limit and allotment together ------------------------------------------

  /**
   * The 429 and 403 checks of one request in one step: counts the request in the token's
   * rate window (refusing it, with nothing recorded, if the window is full), then reserves
   * `bytes` of the account's allotment (refusing, with nothing reserved, if they do not
   * fit). Exactly `rateLimit` followed by `reserveAllotment`, but requests arriving together
   * share one transaction and one durable commit (group commit), instead of two commits
   * each. Resolves once committed durably. Pass the Account from `authenticate`.
   */
  async admit(tokenId: string, account: Account, bytes: number, now: number = this.clock()): Promise<AdmitResult> {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new Error(`cannot reserve ${bytes} bytes`);
    const window = periodWindow(account.period, account.createdAt, now);
    if (!this.local) return this.admitBatcher.submit({ tokenId, account, bytes, now, window });
    // One serving process: the window is decided here and now, and only a request it lets
    // through costs a database write (its reservation, group-committed with the others).
    const rate = this.local.windows.check(tokenId, now, this.rate);
    if (!rate.allowed) return { ok: false, refusal: 'rate-limit', retryAfterSeconds: rate.retryAfterSeconds };
    const held = await this.heldAllotment();
    const reserved = held ? await held.take(account, window, bytes) : await this.reserveBatcher.submit({ account, bytes, window });
    return reserved.ok ? reserved : { ok: false, refusal: 'allotment', remaining: reserved.remaining, resetsAt: reserved.resetsAt };
  }

  /**
   * One batch of `admit`s in one transaction. All rate windows first (rows written in token
   * order), then all reservations (in account order): every batch on every instance takes
   * its row locks in that one global order, so two instances' batches on PostgreSQL wait
   * for each other but never deadlock. The requests of a batch are concurrent, so any order
   * among them is one they could have arrived in.
   */
  private async admitAll(tx: Queryable, requests: readonly AdmitRequest[]): Promise<AdmitResult[]> {
    const rates = await checkRateWindows(tx, requests, this.rate);
    const allowed = requests.filter((_, i) => rates[i]!.allowed);
    const reserved = await this.reserveAllIn(tx, allowed);
    let next = 0;
    return rates.map((rate): AdmitResult => {
      if (!rate.allowed) return { ok: false, refusal: 'rate-limit', retryAfterSeconds: rate.retryAfterSeconds };
      const result = reserved[next++]!;
      return result.ok ? result : { ok: false, refusal: 'allotment', remaining: result.remaining, resetsAt: result.resetsAt };
    });
  }

  /**
   * One batch of reservations in one transaction, one result per request. The requests of
   * one account and period usually all fit, and then one statement takes their sum; when
   * the sum does not fit they are taken one by one in order, so exactly as many succeed as
   * fit, the same as when they come one at a time.
   */
  private async reserveAllIn(tx: Queryable, requests: readonly ReserveRequest[]): Promise<ReserveResult[]> {
    const results: ReserveResult[] = new Array(requests.length);
    for (const group of groupByAccountPeriod(requests)) {
      const first = requests[group[0]!]!;
      const total = group.reduce((sum, i) => sum + requests[i]!.bytes, 0);
      const together = group.length > 1 ? await this.reserveIn(tx, { ...first, bytes: total }) : undefined;
      for (const i of group) {
        const { account, bytes, window } = requests[i]!;
        results[i] = together?.ok
          ? { ok: true, reservation: { accountId: account.id, bytes, periodStart: window.start } }
          : await this.reserveIn(tx, requests[i]!);
      }
    }
    return results;
  }

  /** Gives back a reservation's bytes (to the period they were taken from). */
  async releaseAllotment(reservation: Reservation): Promise<void> {
    const held = reservation.held ? await this.heldAllotment() : undefined;
    if (held?.giveBack(reservation)) return;
    await this.db.execute(
      'UPDATE allotment_usage SET used_bytes = used_bytes - $3 WHERE account_id = $1 AND period_start = $2 AND used_bytes >= $3',
      [reservation.accountId, reservation.periodStart, reservation.bytes],
    );
  }

  /** Deletes usage rows of periods that started before `before` (history is kept until then). */
  async pruneUsage(before: number): Promise<number> {
    return this.db.execute('DELETE FROM allotment_usage WHERE period_start < $1', [before]);
  }
}
