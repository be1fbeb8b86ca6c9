// `qentropy fetch`: a client of any entropy API of the spec's shape (ours or the provider's).
//   qentropy fetch --url URL [--size N] [--bytes N] [--out FILE] [--format raw|hex|base64]
//                  [--token-file FILE] [--ca FILE] [--timeout MS] [--retries N]
// The token comes from QENTROPY_TOKEN or --token-file (never a flag: it would show in `ps`).
import fs from 'node:fs/promises';

import type { Command } from 'commander';

import { EntropyClient, EntropyClientError, MAX_BLOCKS } from '../../client/index.js';
import { readPrivateFile } from '../../config/private-file.js';
import { CliError } from '../errors.js';

export type OutputFormat = 'raw' | 'hex' | 'base64';

export interface FetchCommandOptions {
  url: string;
  token: string;
  /** Blocks per request (1..512, default 1). */
  size?: number;
  /** Total bytes wanted (default: size x 1,024). */
  bytes?: number;
  format?: OutputFormat;
  ca?: string | Buffer;
  timeoutMs?: number;
  /** Attempts per request for 429/5xx/network errors (default 5). */
  attempts?: number;
}

/** Fetches the bytes and returns them formatted (the library form of `qentropy fetch`). */
export async function fetchCommand(options: FetchCommandOptions): Promise<Buffer> {
  const size = options.size ?? 1;
  const total = options.bytes ?? size * 1024;
  const client = new EntropyClient({
    url: options.url,
    token: options.token,
    ...(options.ca !== undefined ? { ca: options.ca } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    // A one-shot tool: a used-up allotment is reported, not waited out for a minute.
    retry: { maxAttempts: options.attempts ?? 5, waitOnAllotment: false, maxDelayMs: 10_000 },
  });
  const parts: Buffer[] = [];
  let got = 0;
  try {
    while (got < total) {
      const blocks = Math.min(size, Math.ceil((total - got) / 1024));
      const data = await client.fetch(blocks);
      const piece = data.subarray(0, Math.min(data.length, total - got));
      parts.push(piece);
      got += piece.length;
    }
  } finally {
    await client.close();
  }
  const raw = Buffer.concat(parts, got);
  for (const part of parts) part.fill(0);
  return formatOutput(raw, options.format ?? 'raw');
}

export function formatOutput(data: Buffer, format: OutputFormat): Buffer {
  if (format === 'raw') return data;
  const text = Buffer.from(`${data.toString(format)}\n`, 'latin1');
  data.fill(0);
  return text;
}

function positiveInteger(name: string, max: number) {
  return (value: string): number => {
    if (!/^[0-9]+$/.test(value) || Number(value) < 1 || Number(value) > max) {
      throw new CliError(`${name} must be an integer from 1 to ${max}`, 2);
    }
    return Number(value);
  };
}

async function readToken(tokenFile: string | undefined): Promise<string> {
  if (tokenFile) {
    try {
      const token = (await readPrivateFile('--token-file', tokenFile)).toString('utf8').trim();
      if (token) return token;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new CliError(code ? `cannot read --token-file ${tokenFile}: ${code}` : (err as Error).message, 2);
    }
    throw new CliError(`--token-file ${tokenFile} is empty`, 2);
  }
  const token = process.env.QENTROPY_TOKEN?.trim();
  if (!token) throw new CliError('no access token: set QENTROPY_TOKEN or pass --token-file FILE', 2);
  return token;
}

export function registerFetch(program: Command): void {
  program
    .command('fetch')
    .description('fetch entropy from an entropy API (token from QENTROPY_TOKEN or --token-file)')
    .requiredOption('--url <url>', 'service address, e.g. https://host:8443 (or the full /api/v1/quantum-entropy URL)')
    .option('--size <blocks>', `1,024-byte blocks per request (1..${MAX_BLOCKS})`, positiveInteger('--size', MAX_BLOCKS), 1)
    .option('--bytes <n>', 'total bytes to fetch (default: one request of --size blocks)', positiveInteger('--bytes', 1 << 30))
    .option('--out <file>', 'write to FILE (created 0600) instead of standard output')
    .option('--format <format>', 'raw, hex or base64', 'raw')
    .option('--token-file <file>', 'read the access token from FILE')
    .option('--ca <file>', 'trust this PEM CA certificate for the server')
    .option('--timeout <ms>', 'per-request time limit in ms', positiveInteger('--timeout', 600_000), 30_000)
    .option('--retries <n>', 'attempts per request on 429, 5xx and network errors', positiveInteger('--retries', 100), 5)
    .action(async (opts: {
      url: string;
      size: number;
      bytes?: number;
      out?: string;
      format: string;
      tokenFile?: string;
      ca?: string;
      timeout: number;
      retries: number;
    }) => {
      if (opts.format !== 'raw' && opts.format !== 'hex' && opts.format !== 'base64') {
        throw new CliError(`--format must be raw, hex or base64, not '${opts.format}'`, 2);
      }
      if (!opts.out && opts.format === 'raw' && process.stdout.isTTY) {
        throw new CliError('refusing to write raw bytes to a terminal: use --out FILE or --format hex|base64', 2);
      }
      const token = await readToken(opts.tokenFile);
      let ca: Buffer | undefined;
      if (opts.ca) {
        ca = await fs.readFile(opts.ca).catch((err: NodeJS.ErrnoException) => {
          throw new CliError(`cannot read --ca ${opts.ca}: ${err.code ?? err.message}`, 2);
        });
      }
      let output: Buffer;
      try {
        output = await fetchCommand({
          url: opts.url,
          token,
          size: opts.size,
          ...(opts.bytes !== undefined ? { bytes: opts.bytes } : {}),
          format: opts.format,
          ...(ca ? { ca } : {}),
          timeoutMs: opts.timeout,
          attempts: opts.retries,
        });
      } catch (err) {
        if (err instanceof EntropyClientError) throw new CliError(err.message, 1);
        throw err;
      }
      if (opts.out) {
        await fs.writeFile(opts.out, output, { mode: 0o600 });
      } else {
        await new Promise<void>((resolve, reject) => process.stdout.write(output, (err) => (err ? reject(err) : resolve())));
      }
      output.fill(0);
    });
}
