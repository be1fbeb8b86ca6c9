// `qentropy token create|list|revoke`: accounts and access tokens of the entropy service
// (docs/accounts.md). Each subcommand is also a library function below.
import type { Command } from 'commander';

import { AccountStore, formatPeriod, parsePeriod, type Period, type TokenInfo, type Usage } from '../../accounts/index.js';
import { ConfigError, loadConfig } from '../../config/index.js';
import { openDatabase, type Db } from '../../storage/db.js';
import { CliError } from '../errors.js';

interface StorageOptions {
  config?: string;
  storage?: string;
}

const UNITS: Record<string, number> = {
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
  KiB: 2 ** 10,
  MiB: 2 ** 20,
  GiB: 2 ** 30,
  TiB: 2 ** 40,
};

/** `102400`, `100KiB`, `1.5 GB`, `unlimited` -> bytes (null = unlimited). */
export function parseAllotment(text: string): number | null {
  if (text === 'unlimited') return null;
  const m = /^([0-9]+(?:\.[0-9]+)?) ?([A-Za-z]+)?$/.exec(text.trim());
  const unit = m?.[2] ?? 'B';
  const factor = UNITS[unit];
  if (!m || factor === undefined) {
    throw new CliError(`--allotment '${text}': expected bytes, e.g. 1048576, 100KiB, 5GB or unlimited`);
  }
  const bytes = Number(m[1]) * factor;
  if (!Number.isSafeInteger(bytes)) throw new CliError(`--allotment '${text}': not a whole number of bytes in range`);
  return bytes;
}

/**
 * `2026-01-31` (00:00 UTC), `2026-01-31T12:00:00Z` (any ISO 8601 with a zone), or a
 * duration from now: `30d`, `12h`, `90m`. Must lie in the future.
 */
export function parseExpiry(text: string, now: number): number {
  const rel = /^([0-9]+)([dhm])$/.exec(text);
  let at: number;
  if (rel) {
    const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[rel[2] as 'd' | 'h' | 'm'];
    at = now + Number(rel[1]) * unit;
  } else if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    at = Date.parse(`${text}T00:00:00Z`);
  } else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) {
    at = Date.parse(text);
  } else {
    throw new CliError(`--expires '${text}': expected a date (2026-01-31), an ISO time with zone, or 30d/12h/90m`);
  }
  if (!Number.isFinite(at)) throw new CliError(`--expires '${text}': not a valid date`);
  if (at <= now) throw new CliError(`--expires '${text}': lies in the past`);
  return at;
}

function parsePeriodOption(text: string): Period {
  try {
    return parsePeriod(text);
  } catch (err) {
    throw new CliError(`--period ${(err as Error).message.replace(/^period /, '')}`);
  }
}

/** The storage URL: --storage, else the config file's storage.url (with its env overrides). */
export function resolveStorageUrl(options: StorageOptions): string {
  if (options.storage) return options.storage;
  try {
    return loadConfig(options.config !== undefined ? { file: options.config } : {}).storage.url;
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
}

async function withStore<T>(options: StorageOptions, fn: (store: AccountStore) => Promise<T>): Promise<T> {
  const url = resolveStorageUrl(options);
  let db: Db;
  try {
    db = await openDatabase({ url });
  } catch (err) {
    throw new CliError(`storage: ${(err as Error).message}`);
  }
  try {
    return await fn(await AccountStore.open(db));
  } finally {
    await db.close();
  }
}

function iso(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace(/\.000Z$/, 'Z');
}

function formatBytes(n: number | null): string {
  if (n === null) return 'unlimited';
  return String(n);
}

export interface CreateTokenOptions extends StorageOptions {
  account: string;
  allotment?: string;
  period?: string;
  expires?: string;
  json?: boolean;
}

export interface CreateTokenResult {
  token: string;
  id: string;
  account: string;
  accountCreated: boolean;
  allotmentBytes: number | null;
  period: string;
  expiresAt: number | null;
}

/** Creates a token (and the account when new, or updates its allotment/period when given). */
export async function createTokenCommand(options: CreateTokenOptions): Promise<CreateTokenResult> {
  const now = Date.now();
  const allotment = options.allotment !== undefined ? parseAllotment(options.allotment) : undefined;
  const period = options.period !== undefined ? parsePeriodOption(options.period) : undefined;
  const expiresAt = options.expires !== undefined ? parseExpiry(options.expires, now) : null;
  return withStore(options, async (store) => {
    let account = await store.getAccount(options.account);
    let accountCreated = false;
    if (!account) {
      try {
        account = await store.createAccount({
          name: options.account,
          allotmentBytes: allotment ?? null,
          ...(period ? { period } : {}),
        });
      } catch (err) {
        throw new CliError(`--account: ${(err as Error).message}`);
      }
      accountCreated = true;
    } else if (allotment !== undefined || period !== undefined) {
      account = await store.updateAccount(account.id, {
        ...(allotment !== undefined ? { allotmentBytes: allotment } : {}),
        ...(period ? { period } : {}),
      });
    }
    const created = await store.createToken(account.id, { expiresAt });
    return {
      token: created.token,
      id: created.info.id,
      account: account.name,
      accountCreated,
      allotmentBytes: account.allotmentBytes,
      period: formatPeriod(account.period),
      expiresAt,
    };
  });
}

export interface TokenListEntry extends TokenInfo {
  usage: Usage;
}

export async function listTokensCommand(options: StorageOptions): Promise<TokenListEntry[]> {
  return withStore(options, async (store) => {
    const tokens = await store.listTokens();
    const usage = new Map<number, Usage>();
    for (const t of tokens) if (!usage.has(t.accountId)) usage.set(t.accountId, await store.usage(t.accountId));
    return tokens.map((t) => ({ ...t, usage: usage.get(t.accountId)! }));
  });
}

export async function revokeTokenCommand(id: string, options: StorageOptions): Promise<void> {
  const found = await withStore(options, (store) => store.revokeToken(id));
  if (!found) throw new CliError(`no token with id '${id}' (see qentropy token list)`);
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ').trimEnd()).join('\n') + '\n';
}

function withStorageOptions(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'config file (default $QENTROPY_CONFIG or /etc/qentropy/qentropy.json)')
    .option('--storage <url>', 'storage URL, overriding the config: sqlite:PATH or postgres://...');
}

export function registerToken(program: Command): void {
  const token = program.command('token').description('accounts and access tokens of the entropy service');

  withStorageOptions(
    token
      .command('create')
      .description('create an access token (and its account when new); prints the token once')
      .requiredOption('--account <name>', 'account the token belongs to')
      .option('--allotment <bytes>', 'bytes per period, e.g. 104857600, 100MiB, unlimited (new account default: unlimited)')
      .option('--period <period>', 'allotment period: month (on the start day), day, or hours:N (default month)')
      .option('--expires <date>', 'expiry: 2026-01-31, an ISO time with zone, or 30d/12h/90m (default: never)')
      .option('--json', 'print JSON'),
  ).action(async (opts: CreateTokenOptions) => {
    const r = await createTokenCommand(opts);
    if (opts.json) {
      process.stdout.write(`${JSON.stringify({ ...r, expiresAt: r.expiresAt === null ? null : iso(r.expiresAt) })}\n`);
      return;
    }
    // The token alone on stdout (for scripts); the rest on stderr.
    process.stdout.write(`${r.token}\n`);
    process.stderr.write(
      `token ${r.id} for account ${r.account}${r.accountCreated ? ' (new)' : ''}: allotment ${formatBytes(r.allotmentBytes)} bytes per ${r.period}, expires ${r.expiresAt === null ? 'never' : iso(r.expiresAt)}\n` +
        'store the token now: it is not shown again\n',
    );
  });

  withStorageOptions(
    token.command('list').description('list tokens (never their secrets) with their account usage this period').option('--json', 'print JSON'),
  ).action(async (opts: StorageOptions & { json?: boolean }) => {
    const entries = await listTokensCommand(opts);
    if (opts.json) {
      process.stdout.write(`${JSON.stringify(entries)}\n`);
      return;
    }
    const rows = [['ID', 'ACCOUNT', 'CREATED', 'EXPIRES', 'REVOKED', 'USED', 'ALLOTMENT', 'RESETS']];
    for (const e of entries) {
      rows.push([
        e.id,
        e.accountName,
        iso(e.createdAt),
        iso(e.expiresAt),
        iso(e.revokedAt),
        String(e.usage.usedBytes),
        formatBytes(e.usage.allotmentBytes),
        iso(e.usage.resetsAt),
      ]);
    }
    process.stdout.write(entries.length === 0 ? 'no tokens\n' : table(rows));
  });

  withStorageOptions(token.command('revoke').description('revoke a token by its id').argument('<id>', 'token id (tok_...)')).action(
    async (id: string, opts: StorageOptions) => {
      await revokeTokenCommand(id, opts);
      process.stderr.write(`token ${id} revoked\n`);
    },
  );
}
