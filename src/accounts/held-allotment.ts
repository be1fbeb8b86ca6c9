// Allotment the serving process has charged in advance, so a request is served without a
// durable commit of its own (SQLite only: one serving process per database,
// storage/instance-lock.ts).
//
// The rule that matters (product.md §2) is that no byte leaves before a durable record
// charges it. Instead of one record per request, the process charges the account ahead in
// grants (`allotment_usage.held_bytes`, committed and flushed like any reservation) and
// serves requests out of the grant in memory. Served bytes move from `held_bytes` to
// `used_bytes` in the database lazily (every 100 ms, without a flush: a crash loses none
// of them, see below). So:
//
// - exactness: a grant never exceeds what the allotment has left, and the one process
//   serving the database takes every request of the account from the same grant, so
//   requests are refused (403) exactly when the remaining allotment is too small;
// - a clean stop returns the unserved part of every grant;
// - after a crash, the next serving process counts everything still held as used
//   (`reclaim`): some of it may have been served, and an account is never under-charged.
//   The account loses at most the unserved part of one grant, which is sized to about a
//   quarter second of its recent traffic (64 KiB to 64 MiB);
// - other processes (the `token` CLI) see `used_bytes` up to 100 ms behind, and never an
//   allotment with room the server has already granted itself.
//
// PostgreSQL instances share accounts, so there every request reserves in the database.
import type { Db } from '../storage/db.js';
import type { Account, Reservation, ReserveResult } from './types.js';
import type { PeriodWindow } from './period.js';
import { readAllotmentRow } from './usage-row.js';

export interface HeldAllotmentOptions {
  /** How often served bytes move from held to used in the database (ms, default 100). */
  moveIntervalMs?: number;
  /** Smallest grant (default 64 KiB). */
  minGrantBytes?: number;
  /** Largest grant unless one request needs more (default 64 MiB). */
  maxGrantBytes?: number;
  /** Grants cover about this long of the account's recent traffic (ms, default 250). */
  grantHorizonMs?: number;
}

interface Grant {
  accountId: number;
  /** The account's allotment the grant was sized against; a change returns the grant. */
  allotmentBytes: number | null;
  periodStart: number;
  periodEnd: number;
  /** Charged in the database and not served yet. */
  left: number;
  /** Served, still counted as held in the database (moved to used by the next move). */
  unmoved: number;
  /** The extension in flight; requests that need more wait for it. */
  extending: Promise<void> | undefined;
  /** Whether the last extension got all it asked for (else the allotment is nearly used up). */
  lastWasFull: boolean;
  grantedAt: number;
  servedSinceGrant: number;
}

/** Adds a grant if it still fits (another process may have reserved since the read). */
const GRANT_SQL = `INSERT INTO allotment_usage (account_id, period_start, used_bytes, held_bytes)
                     SELECT id, $2, 0, $3 FROM accounts WHERE id = $1 AND (allotment_bytes IS NULL OR $3 <= allotment_bytes)
                   ON CONFLICT (account_id, period_start) DO UPDATE SET held_bytes = allotment_usage.held_bytes + excluded.held_bytes
                     WHERE allotment_usage.used_bytes + allotment_usage.held_bytes + excluded.held_bytes <=
                           COALESCE((SELECT allotment_bytes FROM accounts WHERE id = $1), allotment_usage.used_bytes + allotment_usage.held_bytes + excluded.held_bytes)`;
const MOVE_SQL = `UPDATE allotment_usage SET used_bytes = used_bytes + $3, held_bytes = held_bytes - $3
                   WHERE account_id = $1 AND period_start = $2`;
const RETURN_SQL = `UPDATE allotment_usage SET held_bytes = held_bytes - $3 WHERE account_id = $1 AND period_start = $2`;

export class HeldAllotment {
  private readonly grants = new Map<string, Grant>();
  private readonly timer: NodeJS.Timeout;
  private moving: Promise<void> | undefined;
  private closed = false;
  private readonly minGrant: number;
  private readonly maxGrant: number;
  private readonly horizonMs: number;

  private constructor(
    private readonly db: Db,
    private readonly clock: () => number,
    options: HeldAllotmentOptions,
  ) {
    this.minGrant = options.minGrantBytes ?? 64 * 1024;
    this.maxGrant = options.maxGrantBytes ?? 64 * 1024 * 1024;
    this.horizonMs = options.grantHorizonMs ?? 250;
    this.timer = setInterval(() => void this.moveServed().catch(() => undefined), options.moveIntervalMs ?? 100);
    this.timer.unref();
  }

  /**
   * Starts serving from held allotment. Only the process that serves the database may call
   * this: it first counts as used everything a previous server left held (it stopped
   * without returning it, so some of it may have been served). Returns those bytes.
   */
  static async start(
    db: Db,
    clock: () => number,
    options: HeldAllotmentOptions = {},
  ): Promise<{ held: HeldAllotment; reclaimedBytes: number }> {
    const [row] = await db.query<{ held: number | null }>('SELECT SUM(held_bytes) AS held FROM allotment_usage WHERE held_bytes <> 0');
    await db.execute('UPDATE allotment_usage SET used_bytes = used_bytes + held_bytes, held_bytes = 0 WHERE held_bytes <> 0');
    return { held: new HeldAllotment(db, clock, options), reclaimedBytes: Number(row?.held ?? 0) };
  }

  /**
   * Takes `bytes` for a request of `account` in `window`: from the grant at once, or after
   * extending it by a durable commit. Refuses (nothing taken) when the allotment has less
   * than `bytes` left, counting the grant's unserved part as left.
   */
  async take(account: Account, window: PeriodWindow, bytes: number): Promise<ReserveResult> {
    if (this.closed) throw new Error('held allotment is closed');
    for (;;) {
      // Looked up on every pass: while this request waited, its period may have ended and
      // the grant been retired.
      const grant = this.grantFor(account, window);
      if (grant.allotmentBytes !== account.allotmentBytes) {
        // The allotment changed (this process or the CLI; the token cache hands out the new
        // account): give back what is unserved, so the new allotment applies at once.
        await this.returnUnserved(grant, account.allotmentBytes);
        continue;
      }
      if (grant.left >= bytes) {
        grant.left -= bytes;
        grant.unmoved += bytes;
        grant.servedSinceGrant += bytes;
        // Half used: ask for the next grant now, so requests rarely wait for a flush.
        if (!grant.extending && grant.lastWasFull && grant.left < this.targetFor(grant) / 2) {
          this.extend(grant, 0).catch(() => undefined); // a failed prefetch is retried on demand
        }
        return { ok: true, reservation: { accountId: account.id, bytes, periodStart: window.start, held: true } };
      }
      if (grant.extending) {
        await grant.extending;
        continue;
      }
      const free = await this.extend(grant, bytes - grant.left);
      if (free !== undefined) return { ok: false, remaining: grant.left + free, resetsAt: window.end };
    }
  }

  private grantFor(account: Account, window: PeriodWindow): Grant {
    const key = `${account.id}:${window.start}`;
    let grant = this.grants.get(key);
    if (!grant) {
      grant = {
        accountId: account.id,
        allotmentBytes: account.allotmentBytes,
        periodStart: window.start,
        periodEnd: window.end,
        left: 0,
        unmoved: 0,
        extending: undefined,
        lastWasFull: true,
        grantedAt: this.clock(),
        servedSinceGrant: 0,
      };
      this.grants.set(key, grant);
    }
    return grant;
  }

  /** Returns the grant's unserved bytes to the allotment (durably) and re-bases it on `allotmentBytes`. */
  private async returnUnserved(grant: Grant, allotmentBytes: number | null): Promise<void> {
    if (grant.extending) await grant.extending;
    if (grant.allotmentBytes === allotmentBytes) return; // another request did it meanwhile
    const returned = grant.left;
    grant.left = 0;
    grant.allotmentBytes = allotmentBytes;
    grant.lastWasFull = true;
    if (returned > 0) await this.db.execute(RETURN_SQL, [grant.accountId, grant.periodStart, returned]);
  }

  /**
   * Gives a request's bytes back to its grant (the pool was short: 503). false when the
   * grant was retired meanwhile (its period ended and its served bytes moved to used):
   * release them from used then, as any reservation.
   */
  giveBack(reservation: Reservation): boolean {
    const grant = this.grants.get(`${reservation.accountId}:${reservation.periodStart}`);
    if (!grant) return false;
    grant.left += reservation.bytes;
    grant.unmoved -= reservation.bytes;
    return true;
  }

  /** What this process holds for an account's period: served but not moved, and unserved. */
  heldFor(accountId: number, periodStart: number): { unmoved: number; left: number } | undefined {
    const grant = this.grants.get(`${accountId}:${periodStart}`);
    return grant ? { unmoved: grant.unmoved, left: grant.left } : undefined;
  }

  /** Moves what was served so far from held to used now, rather than at the next tick. */
  async recordServed(): Promise<void> {
    await this.moving;
    await this.moveServed();
  }

  /** Records what was served and returns every unserved byte (a clean stop). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await Promise.all([...this.grants.values()].map((g) => g.extending));
    await this.moving;
    await this.moveServed(true);
  }

  /**
   * Extends the grant by at least `need` bytes (0: a prefetch of the usual size) in one
   * durable commit. Resolves to undefined when granted, or to the free bytes of the
   * allotment when even `need` does not fit (nothing granted).
   */
  private extend(grant: Grant, need: number): Promise<number | undefined> {
    const run = async (): Promise<number | undefined> => {
      for (;;) {
        const row = await readAllotmentRow(this.db, grant.accountId, grant.periodStart);
        if (!row) throw new Error(`account ${grant.accountId} does not exist`);
        const free = row.allotmentBytes === null ? Infinity : Math.max(0, row.allotmentBytes - row.usedBytes - row.heldBytes);
        const wanted = Math.max(this.targetFor(grant), need);
        const amount = Math.min(wanted, free);
        if (amount < need || amount === 0) {
          grant.lastWasFull = false;
          return free;
        }
        const granted = await this.db.execute(GRANT_SQL, [grant.accountId, grant.periodStart, amount]);
        if (granted === 0) continue; // another process reserved since the read: read again
        grant.left += amount;
        grant.lastWasFull = amount === wanted;
        grant.grantedAt = this.clock();
        grant.servedSinceGrant = 0;
        return undefined;
      }
    };
    const result = run();
    const settled: Promise<void> = result.then(
      () => undefined,
      () => undefined,
    );
    grant.extending = settled;
    // Cleared before the waiters resume (registered first), so they can start the next one.
    void settled.then(() => {
      if (grant.extending === settled) grant.extending = undefined;
    });
    return result;
  }

  /**
   * About `horizonMs` of the account's traffic since its last grant, within the grant
   * bounds. The rate is measured over at least 10 ms, so a first burst of a few requests
   * does not look like a flood.
   */
  private targetFor(grant: Grant): number {
    const elapsed = Math.max(10, this.clock() - grant.grantedAt);
    const recent = (grant.servedSinceGrant * this.horizonMs) / elapsed;
    return Math.min(this.maxGrant, Math.max(this.minGrant, Math.ceil(recent)));
  }

  /**
   * Moves served bytes from held to used (one transaction, no flush: until it is on disk a
   * crash leaves them held, which the next server counts as used anyway). Grants of ended
   * periods, or all of them when `returnAll`, also return their unserved bytes, durably.
   */
  private async moveServed(returnAll = false): Promise<void> {
    if (this.moving) return this.moving;
    const now = this.clock();
    const moves = [...this.grants.values()].filter((g) => g.unmoved !== 0).map((g) => ({ grant: g, bytes: g.unmoved }));
    // Retired grants leave the map and give up their unserved bytes before anything awaits,
    // so no request can take bytes that are being returned. (If the commit then fails, they
    // stay held in the database, and the next server counts them as used.)
    const returns: Array<{ grant: Grant; bytes: number }> = [];
    for (const [key, grant] of this.grants) {
      if ((returnAll || grant.periodEnd <= now) && !grant.extending) {
        this.grants.delete(key);
        if (grant.left > 0) returns.push({ grant, bytes: grant.left });
        grant.left = 0;
      }
    }
    if (moves.length === 0 && returns.length === 0) return;
    this.moving = (async () => {
      try {
        await this.db.transaction(
          async (tx) => {
            for (const { grant, bytes } of moves) await tx.execute(MOVE_SQL, [grant.accountId, grant.periodStart, bytes]);
            for (const { grant, bytes } of returns) await tx.execute(RETURN_SQL, [grant.accountId, grant.periodStart, bytes]);
          },
          { durable: returns.length > 0 },
        );
        for (const { grant, bytes } of moves) grant.unmoved -= bytes;
      } finally {
        this.moving = undefined;
      }
    })();
    return this.moving;
  }
}
