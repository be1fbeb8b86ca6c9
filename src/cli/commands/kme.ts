// `qentropy kme`: an ETSI GS QKD 014 client (the SAE side) over mutual TLS. JSON on stdout.
//   qentropy kme status --url URL --cert F --key F --ca F PEER
//   qentropy kme enc    --url URL --cert F --key F --ca F PEER [--number N] [--size BITS] [--slave SAE ...]
//   qentropy kme dec    --url URL --cert F --key F --ca F PEER KEY_ID...
// PEER is the other site's KME ID (or a registered SAE ID). The URL may also come from
// QENTROPY_KME_URL and the files from QENTROPY_KME_CERT / _KEY / _CA.
import fs from 'node:fs/promises';

import type { Command } from 'commander';

import { EtsiClient, EtsiClientError } from '../../kme/etsi-client.js';
import { CliError } from '../errors.js';

interface ConnOptions {
  url?: string;
  cert?: string;
  key?: string;
  ca?: string;
  timeout?: string;
}

async function readFile(what: string, file: string | undefined, env: string): Promise<Buffer> {
  const f = file ?? process.env[env];
  if (!f) throw new CliError(`--${what} FILE is required (or set ${env})`);
  try {
    return await fs.readFile(f);
  } catch (err) {
    throw new CliError(`cannot read --${what} ${f} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}

async function withClient<T>(opts: ConnOptions, fn: (c: EtsiClient) => Promise<T>): Promise<T> {
  const url = opts.url ?? process.env.QENTROPY_KME_URL;
  if (!url) throw new CliError('--url URL of the KME is required (or set QENTROPY_KME_URL)');
  const timeoutMs = opts.timeout === undefined ? undefined : Number(opts.timeout);
  if (timeoutMs !== undefined && !(timeoutMs > 0)) throw new CliError('--timeout must be a positive number of ms');
  let client: EtsiClient;
  try {
    client = new EtsiClient({
      url,
      cert: await readFile('cert', opts.cert, 'QENTROPY_KME_CERT'),
      key: await readFile('key', opts.key, 'QENTROPY_KME_KEY'),
      ca: await readFile('ca', opts.ca, 'QENTROPY_KME_CA'),
      ...(timeoutMs ? { timeoutMs } : {}),
    });
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError((err as Error).message);
  }
  try {
    return await fn(client);
  } catch (err) {
    if (err instanceof EtsiClientError) throw new CliError(err.message, err.status === undefined ? 2 : 1);
    throw err;
  } finally {
    await client.close();
  }
}

function positiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value) || Number(value) < 1) throw new CliError(`--${name} must be a positive integer`);
  return Number(value);
}

function connection(cmd: Command): Command {
  return cmd
    .option('--url <url>', 'base URL of your site\'s KME, e.g. https://kme-a:8443 (or QENTROPY_KME_URL)')
    .option('--cert <file>', 'SAE certificate (PEM)')
    .option('--key <file>', 'SAE private key (PEM)')
    .option('--ca <file>', 'cluster CA certificate (PEM)')
    .option('--timeout <ms>', 'request time limit');
}

const print = (v: unknown): void => {
  process.stdout.write(`${JSON.stringify(v)}\n`);
};

export function registerKme(program: Command): void {
  const kme = program.command('kme').description('ETSI GS QKD 014 client: status, enc (get new keys), dec (get keys by ID)');

  connection(kme.command('status').description('status of the link to PEER (a KME ID or SAE ID)').argument('<peer>')).action(
    async (peer: string, opts: ConnOptions) => {
      print(await withClient(opts, (c) => c.status(peer)));
    },
  );

  connection(
    kme
      .command('enc')
      .description('create keys shared with PEER; prints {"keys":[{"key_ID","key"}]}')
      .argument('<peer>')
      .option('--number <n>', 'how many keys (default 1)')
      .option('--size <bits>', 'key size in bits, a multiple of 8 (default: the KME\'s)')
      .option('--slave <sae...>', 'additional slave SAE IDs'),
  ).action(async (peer: string, opts: ConnOptions & { number?: string; size?: string; slave?: string[] }) => {
    const number = positiveInt(opts.number, 'number');
    const size = positiveInt(opts.size, 'size');
    const keys = await withClient(opts, (c) =>
      c.encKeys(peer, { ...(number ? { number } : {}), ...(size ? { size } : {}), ...(opts.slave ? { additionalSlaveSaeIds: opts.slave } : {}) }),
    );
    print({ keys });
  });

  connection(
    kme
      .command('dec')
      .description('retrieve keys by ID that PEER (the originating site or SAE) shared; prints {"keys":[...]}')
      .argument('<peer>')
      .argument('<keyIds...>'),
  ).action(async (peer: string, keyIds: string[], opts: ConnOptions) => {
    print({ keys: await withClient(opts, (c) => c.decKeys(peer, keyIds)) });
  });
}
