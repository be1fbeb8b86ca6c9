// The per-token sliding rate window (product.md §3: the 31st request inside any 10 s gets
// 429), kept where every instance that serves the tokens can count together:
//
// - checkRateWindows (PostgreSQL, several instances): the `rate_windows` table. A whole
//   batch of checks (the requests of one group commit) costs two statements: one read of
//   every window the batch touches and one multi-row write of the windows that changed.
//   Concurrency across instances is optimistic: each row carries a version, the write
//   applies only to rows whose version is still the one read (compare-and-swap), and the
//   checks of tokens whose write lost are decided again on a fresh read. Inside one SQLite
//   transaction nothing else can write, so there the first write always wins.
// - LocalRateWindows (SQLite, one serving process per database: storage/instance-lock.ts):
//   the process's memory. The table would cost a page write per token per commit, the
//   largest part of a small request's cost, for a window that only this process reads.

import type { Queryable } from '../storage/db.js';
import type { RateLimitResult, RateLimitSettings } from './types.js';

export interface RateCheck {
  tokenId: string;
  /** When the request arrived (ms since the epoch). */
  now: number;
}

interface StoredWindow {
  stamps: number[];
  /** The row's version, or -1 when the token has no row yet. */
  version: number;
}

function parseStamps(text: string): number[] {
  return text === '' ? [] : text.split(',').map(Number);
}

/**
 * Decides one request against a window (times of the allowed requests still kept), in
 * place: an allowed request's time is added. A refused request is not counted, so a client
 * that keeps knocking is not locked out longer. Retry-After is the whole seconds until the
 * oldest counted request leaves the window (at least 1).
 */
export function decide(stamps: number[], now: number, { requests, windowMs }: RateLimitSettings): RateLimitResult {
  const inWindow = stamps.filter((t) => t > now - windowMs);
  stamps.length = 0;
  stamps.push(...inWindow);
  if (inWindow.length >= requests) {
    const oldestCounted = inWindow[inWindow.length - requests]!;
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((oldestCounted + windowMs - now) / 1000)) };
  }
  // Kept sorted: requests of one batch may carry times slightly out of order.
  let at = stamps.length;
  while (at > 0 && stamps[at - 1]! > now) at--;
  stamps.splice(at, 0, now);
  return { allowed: true };
}

/**
 * The statement texts for a batch of `n` windows, made once per size: the same string
 * object each time keeps the statement-cache lookups from hashing a new string per batch.
 */
const statements = new Map<number, { read: string; write: string }>();
function statementsFor(n: number): { read: string; write: string } {
  let texts = statements.get(n);
  if (!texts) {
    const list = Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', ');
    const rows = Array.from({ length: n }, (_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`).join(', ');
    // The new version is the version read + 1 (0 for a new row), so "the row is still at
    // the version read" is `stored version + 1 = new version`; a row that appeared after a
    // read that found none is at version >= 0 and fails it too.
    texts = {
      read: `SELECT token_id, stamps, version FROM rate_windows WHERE token_id IN (${list})`,
      write: `INSERT INTO rate_windows (token_id, stamps, version) VALUES ${rows}
                ON CONFLICT (token_id) DO UPDATE SET stamps = excluded.stamps, version = excluded.version
                  WHERE rate_windows.version + 1 = excluded.version
              RETURNING token_id`,
    };
    statements.set(n, texts);
  }
  return texts;
}

async function readWindows(q: Queryable, tokenIds: readonly string[]): Promise<Map<string, StoredWindow>> {
  const rows = await q.query<{ token_id: string; stamps: string; version: number }>(statementsFor(tokenIds.length).read, tokenIds);
  const windows = new Map<string, StoredWindow>(tokenIds.map((id) => [id, { stamps: [], version: -1 }]));
  for (const row of rows) windows.set(row.token_id, { stamps: parseStamps(row.stamps), version: Number(row.version) });
  return windows;
}

/**
 * Writes the changed windows in one statement, each only if its row is still at the version
 * read (a new row only if none appeared meanwhile). Returns the tokens whose write applied.
 * Rows are written in token order, so two instances' batches lock rows in one order.
 */
async function writeWindows(q: Queryable, changed: ReadonlyMap<string, StoredWindow>): Promise<Set<string>> {
  const tokenIds = [...changed.keys()].sort();
  const params: Array<string | number> = [];
  for (const id of tokenIds) {
    const window = changed.get(id)!;
    params.push(id, window.stamps.join(','), window.version + 1);
  }
  const written = await q.query<{ token_id: string }>(statementsFor(tokenIds.length).write, params);
  return new Set(written.map((row) => row.token_id));
}

/**
 * Counts a batch of requests in their tokens' windows; one result per check, in order.
 * Checks of one token are decided in the order given.
 */
export async function checkRateWindows(
  q: Queryable,
  checks: readonly RateCheck[],
  settings: RateLimitSettings,
): Promise<RateLimitResult[]> {
  const results: RateLimitResult[] = new Array(checks.length);
  let pending = [...new Set(checks.map((c) => c.tokenId))];
  while (pending.length > 0) {
    const windows = await readWindows(q, pending);
    const changed = new Map<string, StoredWindow>();
    checks.forEach((check, i) => {
      const window = windows.get(check.tokenId);
      if (!window) return; // decided in an earlier round
      const result = decide(window.stamps, check.now, settings);
      results[i] = result;
      if (result.allowed) changed.set(check.tokenId, window);
    });
    const written = changed.size > 0 ? await writeWindows(q, changed) : new Set<string>();
    // Another instance wrote these windows since they were read: decide their checks again.
    pending = [...changed.keys()].filter((id) => !written.has(id));
  }
  return results;
}

/**
 * The windows of the one process that serves a SQLite database, in memory. A restart
 * forgets them, which at most lets each token start a fresh window early; allotment usage,
 * which matters, stays in the database.
 */
export class LocalRateWindows {
  private readonly windows = new Map<string, number[]>();
  private nextSweep = 0;

  /** Counts one request of `tokenId` at `now` (decide's rules), at once. */
  check(tokenId: string, now: number, settings: RateLimitSettings): RateLimitResult {
    this.sweep(now, settings.windowMs);
    let stamps = this.windows.get(tokenId);
    if (!stamps) {
      stamps = [];
      this.windows.set(tokenId, stamps);
    }
    return decide(stamps, now, settings);
  }

  /** Once per window length, forgets tokens whose newest request has left the window. */
  private sweep(now: number, windowMs: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + windowMs;
    for (const [tokenId, stamps] of this.windows) {
      const newest = stamps[stamps.length - 1];
      if (newest === undefined || newest <= now - windowMs) this.windows.delete(tokenId);
    }
  }
}
