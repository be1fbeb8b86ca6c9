// Accounts, tokens, allotments and the rate-limit window, run identically on SQLite and
// (when QENTROPY_PG_URL is set) PostgreSQL, including two instances on one database.
import crypto from 'node:crypto';
import fs from 'node:fs';

import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { AccountStore, parseBearer, parsePeriod, periodWindow, type Period } from '../src/accounts/index.js';
import type { HeldAllotmentOptions } from '../src/accounts/held-allotment.js';
import { checkRateWindows } from '../src/accounts/rate-windows.js';
import { TokenCache, type CachedToken } from '../src/accounts/token-cache.js';
import type { Db, Queryable } from '../src/storage/db.js';
import { describeEachEngine } from './helpers/databases.js';

const T0 = Date.UTC(2025, 0, 10, 15, 30); // 2025-01-10 15:30 UTC
const utc = (y: number, m: number, d: number, h = 0) => Date.UTC(y, m - 1, d, h);

class FakeClock {
  constructor(public now: number) {}
  read = (): number => this.now;
}

describeEachEngine('accounts', (engine) => {
  let db: Db;
  let clock: FakeClock;
  let store: AccountStore;
  const extra: Db[] = [];

  /** A second, independent instance on the same database (own pool on PostgreSQL). */
  async function secondInstance(): Promise<AccountStore> {
    const other = await engine.open();
    extra.push(other);
    return AccountStore.open(other, { clock: clock.read });
  }

  /**
   * Runs one statement as another process would: on SQLite through a connection of its own
   * (this process's handles all share one), on PostgreSQL through another instance's pool.
   */
  async function elsewhere(sql: string, params: Array<string | number>): Promise<void> {
    if (engine.name === 'postgres') {
      const other = await engine.open();
      extra.push(other);
      await other.execute(sql, params);
      return;
    }
    const connection = new Database(engine.url.slice('sqlite:'.length));
    try {
      connection.prepare(sql.replace(/\$\d+/g, '?')).run(...params); // $n in order
    } finally {
      connection.close();
    }
  }

  beforeEach(async () => {
    await engine.reset();
    db = await engine.open();
    clock = new FakeClock(T0);
    store = await AccountStore.open(db, { clock: clock.read });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await Promise.all(extra.splice(0).map((d) => d.close()));
    await db.close();
  });

  describe('tokens', () => {
    it('are 256 random bits shown once as qe_<base64url>, and authenticate to their account', async () => {
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 1 << 20 });
      const a = await store.createToken(account.id);
      const b = await store.createToken(account.id);
      expect(a.token).toMatch(/^qe_[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(a.token.slice(3), 'base64url')).toHaveLength(32);
      expect(a.token).not.toBe(b.token);
      expect(a.info.id).not.toBe(b.info.id);
      const auth = await store.authenticate(a.token);
      expect(auth).toEqual({ ok: true, account, tokenId: a.info.id });
    });

    it('are stored only as their SHA-256: the secret is nowhere in the database', async () => {
      const account = await store.createAccount({ name: 'alice' });
      const { token, info } = await store.createToken(account.id);
      const rows = await db.query<Record<string, unknown>>('SELECT * FROM tokens');
      expect(rows).toHaveLength(1);
      const expectedHash = crypto.createHash('sha256').update(token).digest();
      expect(Buffer.from(rows[0]!.hash as Buffer).equals(expectedHash)).toBe(true);
      const secretPart = token.slice(3);
      for (const value of Object.values(rows[0]!)) {
        expect(String(value)).not.toContain(secretPart);
        if (Buffer.isBuffer(value)) expect(value.includes(Buffer.from(secretPart))).toBe(false);
      }
      if (engine.name === 'sqlite') {
        // Grep the database file and its WAL for the secret (and its raw bytes).
        const file = engine.url.slice('sqlite:'.length);
        const raw = Buffer.from(secretPart, 'base64url');
        for (const f of [file, `${file}-wal`].filter((p) => fs.existsSync(p))) {
          const bytes = fs.readFileSync(f);
          expect(bytes.includes(Buffer.from(secretPart))).toBe(false);
          expect(bytes.includes(raw)).toBe(false);
        }
        // ...while the public id and the hash are there, so the grep does see the rows.
        const all = Buffer.concat([file, `${file}-wal`].filter((p) => fs.existsSync(p)).map((p) => fs.readFileSync(p)));
        expect(all.includes(Buffer.from(info.id))).toBe(true);
        expect(all.includes(expectedHash)).toBe(true);
      }
    });

    it('are compared with crypto.timingSafeEqual, for a known and an unknown token alike', async () => {
      const account = await store.createAccount({ name: 'alice' });
      const { token } = await store.createToken(account.id);
      const spy = vi.spyOn(crypto, 'timingSafeEqual');
      await store.authenticate(token);
      expect(spy).toHaveBeenCalledTimes(1);
      const stranger = `qe_${crypto.randomBytes(32).toString('base64url')}`;
      expect(await store.authenticate(stranger)).toEqual({ ok: false, reason: 'unknown' });
      expect(spy).toHaveBeenCalledTimes(2);
    });

    it('give the reason for every refusal: missing, malformed, unknown, expired, revoked', async () => {
      const account = await store.createAccount({ name: 'alice' });
      const expiring = await store.createToken(account.id, { expiresAt: T0 + 60_000 });
      const revoked = await store.createToken(account.id);
      expect(await store.revokeToken(revoked.info.id)).toBe(true);

      expect(await store.authenticate(undefined)).toEqual({ ok: false, reason: 'missing' });
      expect(await store.authenticate('')).toEqual({ ok: false, reason: 'missing' });
      for (const bad of ['abc', 'qe_short', `qe_${'A'.repeat(42)}!`, `xx_${'A'.repeat(43)}`, `${expiring.token} `]) {
        expect(await store.authenticate(bad)).toEqual({ ok: false, reason: 'malformed' });
      }
      // One character changed: well-formed, but nobody's token.
      const flipped = expiring.token.slice(0, -1) + (expiring.token.endsWith('A') ? 'B' : 'A');
      expect(await store.authenticate(flipped)).toEqual({ ok: false, reason: 'unknown' });

      expect((await store.authenticate(expiring.token, T0 + 59_999)).ok).toBe(true);
      expect(await store.authenticate(expiring.token, T0 + 60_000)).toEqual({ ok: false, reason: 'expired' });
      expect(await store.authenticate(revoked.token)).toEqual({ ok: false, reason: 'revoked' });
    });

    it('are listed without secrets and revoked by id', async () => {
      const account = await store.createAccount({ name: 'alice' });
      const t = await store.createToken(account.id, { expiresAt: T0 + 1000 });
      clock.now += 5;
      expect(await store.revokeToken(t.info.id)).toBe(true);
      clock.now += 5;
      expect(await store.revokeToken(t.info.id)).toBe(true); // idempotent: first time kept
      expect(await store.revokeToken('tok_nonexistent')).toBe(false);
      const list = await store.listTokens();
      expect(list).toEqual([
        { id: t.info.id, accountId: account.id, accountName: 'alice', createdAt: T0, expiresAt: T0 + 1000, revokedAt: T0 + 5 },
      ]);
      expect(JSON.stringify(list)).not.toContain(t.token.slice(3));
    });

    it('a revocation on one instance is seen by the other at once', async () => {
      const other = await secondInstance();
      const account = await store.createAccount({ name: 'alice' });
      const t = await store.createToken(account.id);
      expect((await other.authenticate(t.token)).ok).toBe(true);
      await store.revokeToken(t.info.id);
      expect(await other.authenticate(t.token)).toEqual({ ok: false, reason: 'revoked' });
    });

    it('a change another process commits is seen at the next request, though the token was looked up before', async () => {
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 4096 });
      const t = await store.createToken(account.id, { expiresAt: T0 + 60_000 });
      const u = await store.createToken(account.id);
      for (const token of [t.token, u.token]) expect((await store.authenticate(token)).ok).toBe(true);
      // Expiry is judged at each request's own time, not when the token was first looked up.
      expect(await store.authenticate(t.token, T0 + 60_000)).toEqual({ ok: false, reason: 'expired' });
      // Another process (the CLI beside a daemon): on SQLite a connection of its own. Its
      // change is seen from the next turn of the event loop on (the SQLite engine reads the
      // change mark once per turn), where a request arriving after it is handled.
      const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
      await elsewhere('UPDATE tokens SET revoked_at = $1 WHERE id = $2', [T0, u.info.id]);
      await nextTurn();
      expect(await store.authenticate(u.token)).toEqual({ ok: false, reason: 'revoked' });
      await elsewhere('UPDATE accounts SET allotment_bytes = $1 WHERE id = $2', [8192, account.id]);
      await nextTurn();
      const auth = await store.authenticate(t.token);
      expect(auth.ok && auth.account.allotmentBytes).toBe(8192);
    });
  });

  describe('accounts', () => {
    it('validate names and allotments and refuse duplicates', async () => {
      await store.createAccount({ name: 'alice' });
      await expect(store.createAccount({ name: 'alice' })).rejects.toThrow(/already exists/);
      await expect(store.createAccount({ name: '' })).rejects.toThrow(/account name/);
      await expect(store.createAccount({ name: 'a b' })).rejects.toThrow(/account name/);
      await expect(store.createAccount({ name: 'bob', allotmentBytes: -1 })).rejects.toThrow(/allotment/);
      await expect(store.createAccount({ name: 'bob', allotmentBytes: 1.5 })).rejects.toThrow(/allotment/);
      expect((await store.listAccounts()).map((a) => a.name)).toEqual(['alice']);
    });
  });

  describe('allotment', () => {
    it('200 concurrent 1 KiB reservations against 100 KiB: exactly 100 succeed, across two instances', async () => {
      const other = await secondInstance();
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 100 * 1024 });
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 ? other : store).reserveAllotment(account.id, 1024)),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(100);
      const usage = await store.usage(account.id);
      expect(usage.usedBytes).toBe(100 * 1024);
      expect(usage.remainingBytes).toBe(0);
    });

    it('concurrent reservations of mixed sizes never exceed the allotment', async () => {
      const other = await secondInstance();
      const allotment = 50_000;
      const account = await store.createAccount({ name: 'alice', allotmentBytes: allotment });
      const sizes = Array.from({ length: 120 }, (_, i) => 1 + ((i * 7919) % 3000));
      const results = await Promise.all(sizes.map((n, i) => (i % 2 ? other : store).reserveAllotment(account.id, n)));
      const served = results.reduce((sum, r, i) => sum + (r.ok ? sizes[i]! : 0), 0);
      expect(served).toBeLessThanOrEqual(allotment);
      expect((await store.usage(account.id)).usedBytes).toBe(served);
      // Everything refused really did not fit at the end.
      const smallestRefused = Math.min(...sizes.filter((_, i) => !results[i]!.ok));
      expect(served + smallestRefused).toBeGreaterThan(allotment);
    });

    it('a refusal says what remains and when it resets, and takes nothing', async () => {
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 3000, period: { kind: 'day' } });
      expect((await store.reserveAllotment(account.id, 2048)).ok).toBe(true);
      const refused = await store.reserveAllotment(account.id, 1024);
      expect(refused).toEqual({ ok: false, remaining: 952, resetsAt: utc(2025, 1, 11) });
      expect((await store.usage(account.id)).usedBytes).toBe(2048);
      expect((await store.reserveAllotment(account.id, 952)).ok).toBe(true);
    });

    it('a released reservation is given back, to the period it was taken from', async () => {
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 4096, period: { kind: 'day' } });
      const r = await store.reserveAllotment(account.id, 4096);
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      await store.releaseAllotment(r.reservation);
      expect((await store.usage(account.id)).usedBytes).toBe(0);
      const again = await store.reserveAllotment(account.id, 1024);
      // The day ends; releasing yesterday's reservation must not lower today's usage.
      clock.now = utc(2025, 1, 11, 1);
      expect((await store.reserveAllotment(account.id, 512)).ok).toBe(true);
      if (again.ok) await store.releaseAllotment(again.reservation);
      expect((await store.usage(account.id)).usedBytes).toBe(512);
      expect((await store.usage(account.id, T0)).usedBytes).toBe(0);
    });

    it('an unlimited account is never refused but its usage is counted', async () => {
      const account = await store.createAccount({ name: 'alice', allotmentBytes: null });
      expect((await store.reserveAllotment(account.id, 10 ** 12)).ok).toBe(true);
      expect(await store.usage(account.id)).toMatchObject({ usedBytes: 10 ** 12, remainingBytes: null });
    });

    it('resets monthly on the start day (a start day of 31 falls on the last day of short months)', async () => {
      clock.now = utc(2024, 1, 31, 9); // created 2024-01-31 09:00 UTC (2024 is a leap year)
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 1000 });
      expect((await store.reserveAllotment(account.id, 1000)).ok).toBe(true);
      const refused = await store.reserveAllotment(account.id, 1, utc(2024, 2, 28, 23));
      expect(refused).toEqual({ ok: false, remaining: 0, resetsAt: utc(2024, 2, 29) });
      expect((await store.reserveAllotment(account.id, 1000, utc(2024, 2, 29))).ok).toBe(true);
      // From Feb 29 the next reset is Mar 31 (back to the start day), not Mar 29.
      expect(await store.reserveAllotment(account.id, 1, utc(2024, 3, 30, 23))).toEqual({
        ok: false,
        remaining: 0,
        resetsAt: utc(2024, 3, 31),
      });
      expect((await store.reserveAllotment(account.id, 1, utc(2024, 3, 31))).ok).toBe(true);
      expect((await store.usage(account.id, utc(2024, 4, 29))).resetsAt).toBe(utc(2024, 4, 30));
    });

    it('resets every N hours from the account creation with hours:N', async () => {
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 10, period: { kind: 'hours', hours: 6 } });
      expect((await store.reserveAllotment(account.id, 10)).ok).toBe(true);
      expect(await store.reserveAllotment(account.id, 1, T0 + 6 * 3_600_000 - 1)).toEqual({
        ok: false,
        remaining: 0,
        resetsAt: T0 + 6 * 3_600_000,
      });
      expect((await store.reserveAllotment(account.id, 10, T0 + 6 * 3_600_000)).ok).toBe(true);
    });
  });

  describe('rate limit', () => {
    it('allows 30 requests in any 10 s, refuses the 31st with Retry-After, and is exact at the edges', async () => {
      const other = await secondInstance();
      const account = await store.createAccount({ name: 'alice' });
      const { info } = await store.createToken(account.id);
      // 30 requests 100 ms apart, alternating between two instances: t0, t0+100, ..., t0+2900.
      for (let i = 0; i < 30; i++) {
        expect(await (i % 2 ? other : store).rateLimit(info.id, T0 + i * 100)).toEqual({ allowed: true });
      }
      // 31st at t0+2950: the oldest (t0) leaves at t0+10000, 7.05 s away -> Retry-After 8.
      expect(await other.rateLimit(info.id, T0 + 2950)).toEqual({ allowed: false, retryAfterSeconds: 8 });
      // One ms before the oldest leaves: still refused, Retry-After rounds up to 1.
      expect(await store.rateLimit(info.id, T0 + 9999)).toEqual({ allowed: false, retryAfterSeconds: 1 });
      // Exactly 10 s after the oldest: it has left the window, one slot is free.
      expect(await other.rateLimit(info.id, T0 + 10_000)).toEqual({ allowed: true });
      // ...and only one: t0+100 is still inside until t0+10100.
      expect(await store.rateLimit(info.id, T0 + 10_000)).toEqual({ allowed: false, retryAfterSeconds: 1 });
      expect(await store.rateLimit(info.id, T0 + 10_100)).toEqual({ allowed: true });
    });

    it('counts per token', async () => {
      const account = await store.createAccount({ name: 'alice' });
      const a = await store.createToken(account.id);
      const b = await store.createToken(account.id);
      for (let i = 0; i < 30; i++) await store.rateLimit(a.info.id, T0);
      expect((await store.rateLimit(a.info.id, T0)).allowed).toBe(false);
      expect((await store.rateLimit(b.info.id, T0)).allowed).toBe(true);
    });

    it('60 concurrent requests on two instances: exactly 30 allowed', async () => {
      const other = await secondInstance();
      const account = await store.createAccount({ name: 'alice' });
      const { info } = await store.createToken(account.id);
      const results = await Promise.all(
        Array.from({ length: 60 }, (_, i) => (i % 2 ? other : store).rateLimit(info.id, T0 + i)),
      );
      expect(results.filter((r) => r.allowed)).toHaveLength(30);
      for (const r of results) if (!r.allowed) expect(r.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    });

    it('a window another instance wrote between read and write is decided again on a fresh read', async () => {
      const account = await store.createAccount({ name: 'alice' });
      const { info } = await store.createToken(account.id);
      const settings = { requests: 30, windowMs: 10_000 };
      await db.transaction((tx) => checkRateWindows(tx, Array.from({ length: 28 }, (_, i) => ({ tokenId: info.id, now: T0 + i })), settings));
      // Between this batch's read of the window (28 counted) and its write, "another
      // instance" counts two more requests: the write must not apply, and the re-read sees 30.
      let interfered = false;
      const results = await db.transaction(async (tx) => {
        const racing: Queryable = {
          query: async (sql, params) => {
            const rows = await tx.query(sql, params);
            if (!interfered && sql.startsWith('SELECT token_id, stamps, version FROM rate_windows')) {
              interfered = true;
              const [row] = await tx.query<{ stamps: string }>('SELECT stamps FROM rate_windows WHERE token_id = $1', [info.id]);
              await tx.execute('UPDATE rate_windows SET stamps = $1, version = version + 1 WHERE token_id = $2', [
                `${row!.stamps},${T0 + 100},${T0 + 101}`,
                info.id,
              ]);
            }
            return rows as never;
          },
          execute: (sql, params) => tx.execute(sql, params),
        };
        return checkRateWindows(racing, [{ tokenId: info.id, now: T0 + 200 }], { requests: 30, windowMs: 10_000 });
      });
      expect(interfered).toBe(true);
      expect(results).toEqual([{ allowed: false, retryAfterSeconds: 10 }]);
      // The interfering write stands and nothing of the refused check was recorded.
      const [row] = await db.query<{ stamps: string }>('SELECT stamps FROM rate_windows WHERE token_id = $1', [info.id]);
      expect(row!.stamps.split(',')).toHaveLength(30);
    });

    it('checks of one token in one batch are counted one by one', async () => {
      const account = await store.createAccount({ name: 'alice' });
      const { info } = await store.createToken(account.id);
      const results = await db.transaction((tx) =>
        checkRateWindows(
          tx,
          Array.from({ length: 35 }, (_, i) => ({ tokenId: info.id, now: T0 + i })),
          { requests: 30, windowMs: 10_000 },
        ),
      );
      expect(results.slice(0, 30).every((r) => r.allowed)).toBe(true);
      expect(results.slice(30)).toEqual(Array.from({ length: 5 }, () => ({ allowed: false, retryAfterSeconds: 10 })));
    });

    it('refused requests do not extend the lockout', async () => {
      const account = await store.createAccount({ name: 'alice' });
      const { info } = await store.createToken(account.id);
      for (let i = 0; i < 30; i++) await store.rateLimit(info.id, T0);
      for (let i = 1; i <= 50; i++) expect((await store.rateLimit(info.id, T0 + i * 100)).allowed).toBe(false);
      expect((await store.rateLimit(info.id, T0 + 10_000)).allowed).toBe(true);
    });
  });

  describe('admit: rate limit and allotment in one group-committed step', () => {
    it('200 concurrent 1 KiB admits over 10 tokens against 100 KiB, on two instances: exactly 100 reserved', async () => {
      const other = await secondInstance();
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 100 * 1024 });
      const tokens = await Promise.all(Array.from({ length: 10 }, () => store.createToken(account.id)));
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          (i % 2 ? other : store).admit(tokens[i % 10]!.info.id, account, 1024, T0 + (i % 7)),
        ),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(100);
      expect(results.filter((r) => !r.ok && r.refusal === 'allotment')).toHaveLength(100);
      const usage = await store.usage(account.id);
      expect(usage.usedBytes).toBe(100 * 1024);
    });

    it('60 concurrent admits of one token on two instances: 30 rate limited and nothing taken for them', async () => {
      const other = await secondInstance();
      const alice = await store.createAccount({ name: 'alice', allotmentBytes: 10 * 1024 });
      const bob = await store.createAccount({ name: 'bob', allotmentBytes: 5 * 1024 });
      const a = await store.createToken(alice.id);
      const b = await store.createToken(bob.id);
      // Interleaved with another account's token in the same batches (other rows, other locks).
      const results = await Promise.all(
        Array.from({ length: 120 }, (_, i) => {
          const instance = (i >> 1) % 2 ? other : store;
          return i % 2 ? instance.admit(b.info.id, bob, 1024, T0 + i) : instance.admit(a.info.id, alice, 1024, T0 + i);
        }),
      );
      for (const [account, token, allotmentBlocks] of [
        [alice, a, 10],
        [bob, b, 5],
      ] as const) {
        const mine = results.filter((_, i) => (i % 2 ? bob : alice) === account);
        expect(mine.filter((r) => !r.ok && r.refusal === 'rate-limit')).toHaveLength(30);
        expect(mine.filter((r) => r.ok)).toHaveLength(allotmentBlocks);
        expect(mine.filter((r) => !r.ok && r.refusal === 'allotment')).toHaveLength(30 - allotmentBlocks);
        // Rate-limited requests took nothing; the 30 counted ones fill the window exactly.
        expect((await store.usage(account.id)).usedBytes).toBe(allotmentBlocks * 1024);
        expect((await other.rateLimit(token.info.id, T0 + 200)).allowed).toBe(false);
      }
    });

    it('is exact at the window edges, and checks the rate limit (429) before the allotment (403)', async () => {
      const other = await secondInstance();
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 0 });
      const { info } = await store.createToken(account.id);
      // Allotment refusals still count in the window: they passed the rate limit.
      for (let i = 0; i < 30; i++) {
        expect(await (i % 2 ? other : store).admit(info.id, account, 1, T0 + i * 100)).toMatchObject({ ok: false, refusal: 'allotment' });
      }
      expect(await other.admit(info.id, account, 1, T0 + 2950)).toEqual({ ok: false, refusal: 'rate-limit', retryAfterSeconds: 8 });
      expect(await store.admit(info.id, account, 1, T0 + 9999)).toEqual({ ok: false, refusal: 'rate-limit', retryAfterSeconds: 1 });
      expect(await other.admit(info.id, account, 1, T0 + 10_000)).toMatchObject({ ok: false, refusal: 'allotment' });
      expect(await store.admit(info.id, account, 1, T0 + 10_000)).toMatchObject({ ok: false, refusal: 'rate-limit' });
      await store.updateAccount(account.id, { allotmentBytes: 1 });
      const fresh = (await store.getAccountById(account.id))!;
      const ok = await store.admit(info.id, fresh, 1, T0 + 10_100);
      expect(ok.ok).toBe(true);
      expect((await store.usage(account.id, T0 + 10_100)).usedBytes).toBe(1);
    });

    it('a reservation is committed when admit resolves: another instance sees it and a restart keeps it', async () => {
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 4096 });
      const { info } = await store.createToken(account.id);
      expect((await store.admit(info.id, account, 3000, T0)).ok).toBe(true);
      const other = await secondInstance();
      expect(await other.admit(info.id, account, 2000, T0)).toMatchObject({ ok: false, refusal: 'allotment', remaining: 1096 });
      await db.close();
      db = await engine.open();
      store = await AccountStore.open(db, { clock: clock.read });
      expect((await store.usage(account.id)).usedBytes).toBe(3000);
    });
  });

  // SQLite only: PostgreSQL instances share accounts, so there every request reserves in the database.
  if (engine.name === 'sqlite') describe('while serving SQLite: allotment charged ahead in grants', () => {
    const KIB = 1024;
    /** Runs `body` while this process serves the database, then stops serving (returning its grants). */
    async function whileServing(options: HeldAllotmentOptions, body: () => Promise<void>): Promise<void> {
      await store.startServing(options);
      try {
        await body();
      } finally {
        await store.stopServing();
      }
    }

    /** The database row, as another process reads it. */
    async function row(accountId: number): Promise<{ used_bytes: number; held_bytes: number } | undefined> {
      const [r] = await db.query<{ used_bytes: number; held_bytes: number }>(
        'SELECT used_bytes, held_bytes FROM allotment_usage WHERE account_id = $1',
        [accountId],
      );
      return r;
    }

    it('charges a grant durably before serving from it, and records what was served', async () => {
      await whileServing({ moveIntervalMs: 60_000 }, async () => {
        const account = await store.createAccount({ name: 'alice', allotmentBytes: 1024 * KIB });
        const { info } = await store.createToken(account.id);
        for (let i = 0; i < 3; i++) expect((await store.admit(info.id, account, KIB, T0 + i)).ok).toBe(true);
        // In the database: one 64 KiB grant held, nothing moved to used yet.
        expect(await row(account.id)).toEqual({ used_bytes: 0, held_bytes: 64 * KIB });
        // The serving process reports exactly what it served, and what remains for the account.
        expect(await store.usage(account.id)).toMatchObject({ usedBytes: 3 * KIB, remainingBytes: 1021 * KIB });
        await store.recordServed();
        expect(await row(account.id)).toEqual({ used_bytes: 3 * KIB, held_bytes: 61 * KIB });
      });
      // A clean stop returns the unserved part: the database says exactly what was served.
      expect(await row((await store.getAccount('alice'))!.id)).toEqual({ used_bytes: 3 * KIB, held_bytes: 0 });
    });

    it('refuses exactly when the allotment is used up, and a refused or returned request takes nothing', async () => {
      await whileServing({}, async () => {
        const account = await store.createAccount({ name: 'alice', allotmentBytes: 100 * KIB });
        const tokens = await Promise.all(Array.from({ length: 10 }, () => store.createToken(account.id)));
        const results = await Promise.all(
          Array.from({ length: 200 }, (_, i) => store.admit(tokens[i % 10]!.info.id, account, KIB, T0 + (i % 7))),
        );
        expect(results.filter((r) => r.ok)).toHaveLength(100);
        expect(results.filter((r) => !r.ok && r.refusal === 'allotment')).toHaveLength(100);
        // A request that found the pool short gives its bytes back to the grant.
        const served = results.find((r) => r.ok)!;
        if (served.ok) await store.releaseAllotment(served.reservation);
        expect(await store.usage(account.id)).toMatchObject({ usedBytes: 99 * KIB, remainingBytes: KIB });
        const last = await store.admit(tokens[0]!.info.id, account, KIB, T0 + 10_000);
        expect(last.ok).toBe(true);
        expect(await store.admit(tokens[1]!.info.id, account, KIB, T0 + 10_000)).toMatchObject({ ok: false, refusal: 'allotment', remaining: 0 });
      });
      expect(await row((await store.getAccount('alice'))!.id)).toEqual({ used_bytes: 100 * KIB, held_bytes: 0 });
    });

    it('other processes see held bytes as taken: a reservation cannot use what the server has granted itself', async () => {
      await whileServing({ moveIntervalMs: 60_000 }, async () => {
        const account = await store.createAccount({ name: 'alice', allotmentBytes: 100 * KIB });
        const { info } = await store.createToken(account.id);
        expect((await store.admit(info.id, account, KIB, T0)).ok).toBe(true);
        // 64 KiB held, 1 KiB of it served: a direct reservation of 40 KiB does not fit.
        expect(await store.reserveAllotment(account.id, 40 * KIB)).toMatchObject({ ok: false, remaining: 36 * KIB });
        expect((await store.reserveAllotment(account.id, 36 * KIB)).ok).toBe(true);
        // The server still serves its grant.
        // (400 ms apart, so the rate limit never refuses them.)
        for (let i = 1; i <= 63; i++) expect((await store.admit(info.id, account, KIB, T0 + i * 400)).ok).toBe(true);
        expect(await store.admit(info.id, account, KIB, T0 + 64 * 400)).toMatchObject({ ok: false, refusal: 'allotment', remaining: 0 });
      });
    });

    it('an unlimited account is never refused, whatever the server holds for it', async () => {
      await whileServing({ moveIntervalMs: 60_000 }, async () => {
        const account = await store.createAccount({ name: 'alice' });
        const { info } = await store.createToken(account.id);
        expect((await store.admit(info.id, account, KIB, T0)).ok).toBe(true);
        expect((await row(account.id))!.held_bytes).toBeGreaterThan(0);
        expect((await store.reserveAllotment(account.id, 10 * KIB)).ok).toBe(true);
      });
      expect(await row((await store.getAccount('alice'))!.id)).toEqual({ used_bytes: 11 * KIB, held_bytes: 0 });
    });

    it('after a server stopped without returning its grant, the next one counts the held bytes as used', async () => {
      await store.startServing({ moveIntervalMs: 60_000 });
      const account = await store.createAccount({ name: 'alice', allotmentBytes: 1024 * KIB });
      const { info } = await store.createToken(account.id);
      for (let i = 0; i < 5; i++) expect((await store.admit(info.id, account, KIB, T0 + i)).ok).toBe(true);
      // The process dies: no stopServing; its connection goes away.
      await db.close();
      db = await engine.open();
      store = await AccountStore.open(db, { clock: clock.read });
      expect(await row(account.id)).toEqual({ used_bytes: 0, held_bytes: 64 * KIB });
      // Served bytes are never under-counted; the unserved rest of the grant is lost to the account.
      expect(await store.startServing()).toBe(64 * KIB);
      try {
        expect(await row(account.id)).toEqual({ used_bytes: 64 * KIB, held_bytes: 0 });
        expect(await store.usage(account.id)).toMatchObject({ usedBytes: 64 * KIB, remainingBytes: 960 * KIB });
      } finally {
        await store.stopServing();
      }
    });

    it('a changed allotment applies at once, though a grant was held under the old one', async () => {
      await whileServing({ moveIntervalMs: 60_000 }, async () => {
        const account = await store.createAccount({ name: 'alice', allotmentBytes: 1024 * KIB });
        const t = await store.createToken(account.id);
        const admitNow = async (at: number) => {
          const auth = await store.authenticate(t.token, at);
          if (!auth.ok) throw new Error(auth.reason);
          return store.admit(auth.tokenId, auth.account, KIB, at);
        };
        expect((await admitNow(T0)).ok).toBe(true); // a 64 KiB grant is held now
        // The operator lowers the allotment from another process (`qentropy token create --allotment`).
        await elsewhere('UPDATE accounts SET allotment_bytes = $1 WHERE id = $2', [2 * KIB, account.id]);
        await new Promise((resolve) => setImmediate(resolve));
        expect((await admitNow(T0 + 1)).ok).toBe(true);
        expect(await admitNow(T0 + 2)).toMatchObject({ ok: false, refusal: 'allotment', remaining: 0 });
        // And back up, from this process: the account gets room again at once.
        await store.updateAccount(account.id, { allotmentBytes: 4 * KIB });
        expect((await admitNow(T0 + 3)).ok).toBe(true);
        expect((await admitNow(T0 + 4)).ok).toBe(true);
        expect(await admitNow(T0 + 5)).toMatchObject({ ok: false, refusal: 'allotment', remaining: 0 });
      });
      expect(await row((await store.getAccount('alice'))!.id)).toEqual({ used_bytes: 4 * KIB, held_bytes: 0 });
    });

    it('returns the unserved grant of a period once it has ended', async () => {
      await whileServing({ moveIntervalMs: 60_000 }, async () => {
        const account = await store.createAccount({ name: 'alice', allotmentBytes: 1024 * KIB, period: { kind: 'day' } });
        const { info } = await store.createToken(account.id);
        expect((await store.admit(info.id, account, 2 * KIB, T0)).ok).toBe(true);
        clock.now = T0 + 86_400_000;
        await store.recordServed();
        const [old] = await db.query<{ used_bytes: number; held_bytes: number }>(
          'SELECT used_bytes, held_bytes FROM allotment_usage WHERE account_id = $1 AND period_start < $2',
          [account.id, clock.now - 3_600_000],
        );
        expect(old).toEqual({ used_bytes: 2 * KIB, held_bytes: 0 });
      });
    });
  });

  it('a restart keeps accounts, tokens, usage and revocations', async () => {
    const account = await store.createAccount({ name: 'alice', allotmentBytes: 10_000 });
    const kept = await store.createToken(account.id);
    const revoked = await store.createToken(account.id);
    await store.revokeToken(revoked.info.id);
    expect((await store.reserveAllotment(account.id, 4096)).ok).toBe(true);
    await db.close();

    db = await engine.open();
    store = await AccountStore.open(db, { clock: clock.read });
    const auth = await store.authenticate(kept.token);
    expect(auth.ok && auth.account.name).toBe('alice');
    expect(await store.authenticate(revoked.token)).toEqual({ ok: false, reason: 'revoked' });
    expect((await store.usage(account.id)).usedBytes).toBe(4096);
    expect(await store.reserveAllotment(account.id, 8192)).toMatchObject({ ok: false, remaining: 10_000 - 4096 });
  });
});

describe('token cache (SQLite serving process)', () => {
  const entry = (tokenId: string): CachedToken => ({
    tokenId,
    account: { id: 1, name: 'a', allotmentBytes: null, period: { kind: 'month' }, createdAt: 0 },
    expiresAt: null,
    revokedAt: null,
  });

  it('keeps an answer only if nothing changed between its query and its store', () => {
    const cache = new TokenCache();
    expect(cache.get('k', 7)).toBeUndefined();
    // Read, then this process revokes something before the answer comes back: not kept.
    const stale = cache.begin(7);
    cache.invalidate();
    cache.store('k', entry('tok_old'), stale);
    expect(cache.get('k', 7)).toBeUndefined();
    // Read, then another process commits (the mark moves): not kept either.
    const before = cache.begin(7);
    expect(cache.get('other', 8)).toBeUndefined();
    cache.store('k', entry('tok_old'), before);
    expect(cache.get('k', 8)).toBeUndefined();
    // Nothing in between: kept, until the mark moves again.
    cache.store('k', entry('tok_new'), cache.begin(8));
    expect(cache.get('k', 8)?.tokenId).toBe('tok_new');
    expect(cache.get('k', 9)).toBeUndefined();
  });

  it('holds at most its limit, dropping the oldest', () => {
    const cache = new TokenCache(2);
    cache.get('a', 1);
    for (const key of ['a', 'b', 'c']) cache.store(key, entry(key), cache.begin(1));
    expect(cache.size).toBe(2);
    expect(cache.get('a', 1)).toBeUndefined();
    expect(cache.get('c', 1)?.tokenId).toBe('c');
  });
});

describe('allotment periods', () => {
  const win = (p: Period, anchor: number, now: number) => periodWindow(p, anchor, now);
  const month: Period = { kind: 'month' };

  it('month: from the start day at 00:00 UTC to the same day next month', () => {
    const anchor = utc(2025, 1, 10, 15);
    expect(win(month, anchor, utc(2025, 1, 10, 16))).toEqual({ start: utc(2025, 1, 10), end: utc(2025, 2, 10) });
    expect(win(month, anchor, utc(2025, 2, 9, 23))).toEqual({ start: utc(2025, 1, 10), end: utc(2025, 2, 10) });
    expect(win(month, anchor, utc(2025, 2, 10))).toEqual({ start: utc(2025, 2, 10), end: utc(2025, 3, 10) });
    expect(win(month, anchor, utc(2025, 12, 31))).toEqual({ start: utc(2025, 12, 10), end: utc(2026, 1, 10) });
    expect(win(month, anchor, utc(2026, 1, 5))).toEqual({ start: utc(2025, 12, 10), end: utc(2026, 1, 10) });
  });

  it('month: start day 31 clamps to the last day of short months and returns to 31', () => {
    const anchor = utc(2025, 1, 31);
    expect(win(month, anchor, utc(2025, 2, 15))).toEqual({ start: utc(2025, 1, 31), end: utc(2025, 2, 28) });
    expect(win(month, anchor, utc(2025, 2, 28))).toEqual({ start: utc(2025, 2, 28), end: utc(2025, 3, 31) });
    expect(win(month, anchor, utc(2025, 4, 30, 12))).toEqual({ start: utc(2025, 4, 30), end: utc(2025, 5, 31) });
    expect(win(month, anchor, utc(2024, 2, 29, 1))).toEqual({ start: utc(2024, 2, 29), end: utc(2024, 3, 31) });
  });

  it('day: UTC midnight to midnight', () => {
    expect(win({ kind: 'day' }, 0, utc(2025, 3, 1, 23))).toEqual({ start: utc(2025, 3, 1), end: utc(2025, 3, 2) });
  });

  it('hours:N: consecutive N-hour periods from the anchor', () => {
    const anchor = utc(2025, 1, 1, 5);
    const p: Period = { kind: 'hours', hours: 5 };
    expect(win(p, anchor, utc(2025, 1, 1, 9))).toEqual({ start: utc(2025, 1, 1, 5), end: utc(2025, 1, 1, 10) });
    expect(win(p, anchor, utc(2025, 1, 2, 0))).toEqual({ start: utc(2025, 1, 1, 20), end: utc(2025, 1, 2, 1) });
  });

  it('parses month, day and hours:N and explains anything else', () => {
    expect(parsePeriod('month')).toEqual({ kind: 'month' });
    expect(parsePeriod('hours:24')).toEqual({ kind: 'hours', hours: 24 });
    expect(() => parsePeriod('hours:0')).toThrow(/hours must be 1\.\.8784/);
    expect(() => parsePeriod('week')).toThrow(/expected month, day or hours:N/);
    expect(() => parsePeriod('hours:1.5')).toThrow(/expected month, day or hours:N/);
  });
});

describe('bearer header', () => {
  it('extracts the token or says why not', () => {
    expect(parseBearer(undefined)).toEqual({ ok: false, reason: 'missing' });
    expect(parseBearer('')).toEqual({ ok: false, reason: 'missing' });
    expect(parseBearer('Bearer qe_x')).toEqual({ ok: true, token: 'qe_x' });
    expect(parseBearer('bearer qe_x')).toEqual({ ok: true, token: 'qe_x' });
    expect(parseBearer('Basic dXNlcjpwYXNz')).toEqual({ ok: false, reason: 'malformed' });
    expect(parseBearer('Bearer')).toEqual({ ok: false, reason: 'malformed' });
    expect(parseBearer('Bearer a b')).toEqual({ ok: false, reason: 'malformed' });
  });
});
