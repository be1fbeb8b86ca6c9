// `qentropy token create|list|revoke` end to end: the CLI is compiled and run as its own
// process (bundled from src/ as bin/qentropy.js runs it), on SQLite and (when QENTROPY_PG_URL is set) PostgreSQL.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';

import { AccountStore } from '../src/accounts/index.js';
import type { Db } from '../src/storage/db.js';
import { describeEachEngine } from './helpers/databases.js';
import { createTestPackage, runNode, type RunResult, type TestPackage } from './helpers/package.js';

let pkg: TestPackage;

function run(args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return runNode(pkg.cli, args, { QENTROPY_CONFIG: path.join(pkg.dir, 'absent.json'), ...env });
}

beforeAll(() => {
  pkg = createTestPackage('token-cli');
}, 60_000);

afterAll(() => pkg?.remove());

describeEachEngine('qentropy token', (engine) => {
  let url: string;
  let db: Db;
  beforeEach(async () => {
    await engine.reset();
    url = engine.isolatedUrl;
    db = await engine.open();
  });
  afterEach(() => db.close());

  it('create prints the token once; it authenticates; list shows no secret; revoke stops it', async () => {
    const created = await run(['token', 'create', '--account', 'alice', '--allotment', '100KiB', '--period', 'day', '--expires', '30d', '--storage', url]);
    expect(created.stderr).toMatch(/token tok_\S+ for account alice \(new\): allotment 102400 bytes per day, expires \d{4}-/);
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^qe_[A-Za-z0-9_-]{43}$/);

    const store = await AccountStore.open(db);
    const auth = await store.authenticate(token);
    expect(auth.ok).toBe(true);
    if (!auth.ok) return;
    expect(auth.account).toMatchObject({ name: 'alice', allotmentBytes: 102_400, period: { kind: 'day' } });
    expect((await store.reserveAllotment(auth.account.id, 4096)).ok).toBe(true);

    const list = await run(['token', 'list', '--storage', url]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(auth.tokenId);
    expect(list.stdout).not.toContain(token.slice(3));
    const row = list.stdout.split('\n').find((l) => l.startsWith(auth.tokenId))!;
    expect(row.split(/\s+/)).toEqual([auth.tokenId, 'alice', expect.any(String), expect.any(String), '-', '4096', '102400', expect.any(String)]);

    const json = JSON.parse((await run(['token', 'list', '--json', '--storage', url])).stdout) as Array<{ id: string; usage: { usedBytes: number } }>;
    expect(json).toEqual([expect.objectContaining({ id: auth.tokenId, revokedAt: null, usage: expect.objectContaining({ usedBytes: 4096 }) })]);

    const revoked = await run(['token', 'revoke', auth.tokenId, '--storage', url]);
    expect(revoked.code).toBe(0);
    expect(await store.authenticate(token)).toEqual({ ok: false, reason: 'revoked' });
    expect((await run(['token', 'list', '--storage', url])).stdout.split('\n').find((l) => l.startsWith(auth.tokenId))).toMatch(
      /^\S+\s+alice\s+\S+\s+\S+\s+\d{4}-\d{2}-\d{2}T/,
    );
  });

  it('a second create for the same account adds a token and can change the allotment', async () => {
    expect((await run(['token', 'create', '--account', 'bob', '--storage', url])).code).toBe(0);
    const second = await run(['token', 'create', '--account', 'bob', '--allotment', '5000', '--period', 'hours:6', '--storage', url]);
    expect(second.code).toBe(0);
    expect(second.stderr).toContain('for account bob: allotment 5000 bytes per hours:6');
    const store = await AccountStore.open(db);
    expect(await store.listAccounts()).toEqual([expect.objectContaining({ name: 'bob', allotmentBytes: 5000, period: { kind: 'hours', hours: 6 } })]);
    expect(await store.listTokens()).toHaveLength(2);
  });

  it('bad input gets one line on stderr and a non-zero exit, and changes nothing', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['token', 'create', '--account', 'a b'], /^qentropy: --account: account name 'a b'/],
      [['token', 'create', '--account', 'x', '--allotment', '-5'], /^qentropy: --allotment '-5'/],
      [['token', 'create', '--account', 'x', '--allotment', '10 parsecs'], /^qentropy: --allotment/],
      [['token', 'create', '--account', 'x', '--period', 'week'], /^qentropy: --period 'week': expected month, day or hours:N/],
      [['token', 'create', '--account', 'x', '--expires', '2001-01-01'], /^qentropy: --expires '2001-01-01': lies in the past/],
      [['token', 'create', '--account', 'x', '--expires', 'tomorrow'], /^qentropy: --expires 'tomorrow'/],
      [['token', 'revoke', 'tok_nope'], /^qentropy: no token with id 'tok_nope'/],
    ];
    for (const [args, message] of cases) {
      const r = await run([...args, '--storage', url]);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stdout).toBe('');
    }
    const store = await AccountStore.open(db);
    expect(await store.listAccounts()).toEqual([]);
  });
});

it('takes the storage URL from the config file and QENTROPY_STORAGE_URL, and reports a bad config in one line', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-cli-config-'));
  try {
    const fromFile = path.join(dir, 'file.db');
    const configFile = path.join(dir, 'qentropy.json');
    fs.writeFileSync(configFile, JSON.stringify({ storage: { url: `sqlite:${fromFile}` } }));
    expect((await run(['token', 'create', '--account', 'a', '--config', configFile])).code).toBe(0);
    expect(fs.existsSync(fromFile)).toBe(true);
    expect(fs.statSync(fromFile).mode & 0o777).toBe(0o600);

    const fromEnv = path.join(dir, 'env.db');
    expect((await run(['token', 'create', '--account', 'a', '--config', configFile], { QENTROPY_STORAGE_URL: `sqlite:${fromEnv}` })).code).toBe(0);
    expect(fs.existsSync(fromEnv)).toBe(true);

    fs.writeFileSync(configFile, JSON.stringify({ storage: { url: 'mysql://x/y' }, log: { level: 'loud' } }));
    const bad = await run(['token', 'list', '--config', configFile]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toBe(
      "qentropy: config: 2 problems: storage.url: storage URL 'mysql://x/y': unsupported scheme (use sqlite:PATH or postgres://...); log.level: expected one of fatal, error, warn, info, debug, trace, silent, got \"loud\"\n",
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
