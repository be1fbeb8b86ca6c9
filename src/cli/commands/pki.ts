// `qentropy pki`: the cluster CA and the certificates of sites (KMEs) and clients (SAEs).
//   qentropy pki init  [--dir DIR] [--algorithm ecdsa-p256|ed25519] [--days N] [--name CN] [--force]
//   qentropy pki issue --kme ID [--host NAME_OR_IP ...] [--dir DIR] [--out DIR] [--days N] [--algorithm A] [--force]
//   qentropy pki issue --sae ID --site KME_ID        [--dir DIR] [--out DIR] [--days N] [--algorithm A] [--force]
// Keys are written 0600 and never overwritten without --force. Prints JSON naming the files.
import type { Command } from 'commander';

import { KEY_ALGORITHMS, type KeyAlgorithm } from '../../pki/certs.js';
import { initCaFiles, issueKmeFiles, issueSaeFiles } from '../../pki/files.js';
import { CliError } from '../errors.js';

const DEFAULT_DIR = '/etc/qentropy/pki';

function algorithm(value: string | undefined): KeyAlgorithm | undefined {
  if (value === undefined) return undefined;
  if (!(KEY_ALGORITHMS as readonly string[]).includes(value)) throw new CliError(`--algorithm must be one of ${KEY_ALGORITHMS.join(', ')}`);
  return value as KeyAlgorithm;
}

function days(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 36500) throw new CliError('--days must be a positive number of days');
  return n;
}

async function cli<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(err instanceof Error ? err.message : String(err));
  }
}

export function registerPki(program: Command): void {
  const pki = program.command('pki').description('cluster PKI: a CA, KME (site) and SAE (client) certificates for mutual TLS');

  pki
    .command('init')
    .description('create the cluster CA (ca.crt, ca.key 0600) in --dir')
    .option('--dir <dir>', 'PKI directory', DEFAULT_DIR)
    .option('--algorithm <alg>', 'ecdsa-p256 (default) or ed25519')
    .option('--days <n>', 'validity in days (default 3650)')
    .option('--name <cn>', 'CA common name')
    .option('--force', 'replace an existing CA')
    .action(async (opts: { dir: string; algorithm?: string; days?: string; name?: string; force?: boolean }) => {
      const alg = algorithm(opts.algorithm);
      const validityDays = days(opts.days);
      const files = await cli(() =>
        initCaFiles(opts.dir, {
          ...(alg ? { algorithm: alg } : {}),
          ...(validityDays ? { validityDays } : {}),
          ...(opts.name ? { name: opts.name } : {}),
          force: opts.force ?? false,
        }),
      );
      process.stdout.write(`${JSON.stringify({ ca: files.certFile, key: files.keyFile })}\n`);
    });

  pki
    .command('issue')
    .description('issue a KME certificate (--kme ID) or an SAE certificate (--sae ID --site KME_ID)')
    .option('--kme <id>', 'KME ID of a site: server and client certificate, urn:qentropy:kme:<ID>')
    .option('--sae <id>', 'SAE ID of a client: client certificate, urn:qentropy:sae:<ID>')
    .option('--site <kmeId>', 'with --sae: the site (KME ID) the SAE belongs to')
    .option('--host <name...>', 'with --kme: host names / IP addresses the KME is reached at')
    .option('--dir <dir>', 'PKI directory holding ca.crt and ca.key', DEFAULT_DIR)
    .option('--out <dir>', 'where to write <name>.crt and <name>.key (default: --dir)')
    .option('--algorithm <alg>', 'ecdsa-p256 (default) or ed25519')
    .option('--days <n>', 'validity in days (default 825)')
    .option('--force', 'replace existing files')
    .action(
      async (opts: { kme?: string; sae?: string; site?: string; host?: string[]; dir: string; out?: string; algorithm?: string; days?: string; force?: boolean }) => {
        if ((opts.kme === undefined) === (opts.sae === undefined)) throw new CliError('give exactly one of --kme ID or --sae ID');
        if (opts.sae !== undefined && opts.site === undefined) throw new CliError('--sae needs --site KME_ID (the site the SAE belongs to)');
        if (opts.kme !== undefined && opts.site !== undefined) throw new CliError('--site is for --sae certificates');
        if (opts.sae !== undefined && opts.host !== undefined) throw new CliError('--host is for --kme certificates');
        const alg = algorithm(opts.algorithm);
        const validityDays = days(opts.days);
        const common = { ...(alg ? { algorithm: alg } : {}), ...(validityDays ? { validityDays } : {}), force: opts.force ?? false };
        const out = opts.out ?? opts.dir;
        const files = await cli(() =>
          opts.kme !== undefined
            ? issueKmeFiles(opts.dir, out, { kmeId: opts.kme, hosts: opts.host ?? [], ...common })
            : issueSaeFiles(opts.dir, out, { saeId: opts.sae!, site: opts.site!, ...common }),
        );
        process.stdout.write(`${JSON.stringify({ cert: files.certFile, key: files.keyFile })}\n`);
      },
    );
}
