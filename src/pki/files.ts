// Certificate and key files on disk. Private keys are written 0600 and never overwritten
// unless asked, so a slip of the command line cannot destroy a cluster's CA.
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';

import {
  createCertificateAuthority,
  issueKmeCertificate,
  issueSaeCertificate,
  type CaOptions,
  type CertificateAuthority,
  type IssuedCertificate,
  type KmeCertOptions,
  type SaeCertOptions,
} from './certs.js';

export const CA_CERT_FILE = 'ca.crt';
export const CA_KEY_FILE = 'ca.key';

/** Writes a file readable by its owner only; refuses to replace an existing file unless `overwrite`. */
export async function writePrivateFile(file: string, data: string | Buffer, overwrite = false): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const flags = overwrite ? constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC : constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
  let handle;
  try {
    handle = await fs.open(file, flags, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`${file} exists (use --force to replace it)`);
    throw err;
  }
  try {
    // The mode argument only applies to new files; an overwritten file is tightened too.
    await handle.chmod(0o600);
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Certificates are public: 0644 is fine, but the same no-clobber rule applies. */
async function writePublicFile(file: string, data: string, overwrite: boolean): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
  await fs.writeFile(file, data, { mode: 0o644, flag: overwrite ? 'w' : 'wx' }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EEXIST') throw new Error(`${file} exists (use --force to replace it)`);
    throw err;
  });
}

export interface CaFiles {
  certFile: string;
  keyFile: string;
}

export async function initCaFiles(dir: string, opts: CaOptions & { force?: boolean } = {}): Promise<CaFiles> {
  const ca = await createCertificateAuthority(opts);
  const certFile = path.join(dir, CA_CERT_FILE);
  const keyFile = path.join(dir, CA_KEY_FILE);
  const force = opts.force ?? false;
  if (!force) {
    for (const f of [certFile, keyFile]) {
      if (await exists(f)) throw new Error(`${f} exists (use --force to replace it)`);
    }
  }
  await writePrivateFile(keyFile, ca.keyPem, force);
  await writePublicFile(certFile, ca.certPem, force);
  return { certFile, keyFile };
}

export async function loadCaFiles(dir: string): Promise<CertificateAuthority> {
  const certFile = path.join(dir, CA_CERT_FILE);
  const keyFile = path.join(dir, CA_KEY_FILE);
  try {
    return { certPem: await fs.readFile(certFile, 'utf8'), keyPem: await fs.readFile(keyFile, 'utf8') };
  } catch (err) {
    throw new Error(`cannot read the cluster CA in ${dir} (${(err as NodeJS.ErrnoException).code ?? String(err)}); run 'qentropy pki init' first`);
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

export interface IssuedFiles extends CaFiles {
  name: string;
}

async function writeIssued(outDir: string, name: string, issued: IssuedCertificate, force: boolean): Promise<IssuedFiles> {
  const certFile = path.join(outDir, `${name}.crt`);
  const keyFile = path.join(outDir, `${name}.key`);
  if (!force) {
    for (const f of [certFile, keyFile]) {
      if (await exists(f)) throw new Error(`${f} exists (use --force to replace it)`);
    }
  }
  await writePrivateFile(keyFile, issued.keyPem, force);
  await writePublicFile(certFile, issued.certPem, force);
  return { name, certFile, keyFile };
}

export async function issueKmeFiles(caDir: string, outDir: string, opts: KmeCertOptions & { force?: boolean }): Promise<IssuedFiles> {
  const issued = await issueKmeCertificate(await loadCaFiles(caDir), opts);
  return writeIssued(outDir, `kme-${opts.kmeId}`, issued, opts.force ?? false);
}

export async function issueSaeFiles(caDir: string, outDir: string, opts: SaeCertOptions & { force?: boolean }): Promise<IssuedFiles> {
  const issued = await issueSaeCertificate(await loadCaFiles(caDir), opts);
  return writeIssued(outDir, `sae-${opts.saeId}`, issued, opts.force ?? false);
}
