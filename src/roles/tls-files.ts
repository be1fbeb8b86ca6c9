import fs from 'node:fs/promises';

import { defaultGroups } from '../pqtls/index.js';

/**
 * Reads a role's TLS certificate chain and private key. Both are read; every file that
 * cannot be read is named (certFile first), so the message does not depend on which read
 * happened to fail first.
 */
export async function readTlsFiles(section: string, files: { certFile: string; keyFile: string }): Promise<{ cert: Buffer; key: Buffer }> {
  const [cert, key] = await Promise.allSettled([fs.readFile(files.certFile), fs.readFile(files.keyFile)]);
  const problems: string[] = [];
  if (cert.status === 'rejected') problems.push(`${section}.tls.certFile: cannot read ${files.certFile}: ${(cert.reason as Error).message}`);
  if (key.status === 'rejected') problems.push(`${section}.tls.keyFile: cannot read ${files.keyFile}: ${(key.reason as Error).message}`);
  if (cert.status === 'rejected' || key.status === 'rejected') throw new Error(problems.join('; '));
  return { cert: cert.value, key: key.value };
}

/** What a role that serves HTTPS (entropy, quality) listens with. */
export interface ServingTls {
  cert: Buffer;
  key: Buffer;
  /** Oldest protocol accepted (default TLS 1.3). */
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  /** Key-exchange groups (default: the runtime's, hybrid first where it has ML-KEM). */
  groups?: string;
}

/**
 * Reads `<section>.tls`; undefined when the role serves plain HTTP, an error naming
 * `<section>.plainHttp` when it has neither.
 */
export async function loadServingTls(
  section: string,
  config: { tls?: { certFile: string; keyFile: string; minVersion?: 'TLSv1.2' | 'TLSv1.3'; groups?: string } | undefined; plainHttp?: boolean | undefined },
): Promise<ServingTls | undefined> {
  const { tls, plainHttp } = config;
  if (!tls) {
    if (plainHttp) return undefined;
    throw new Error(`${section}.tls: certFile and keyFile are required (or set ${section}.plainHttp to serve plain HTTP)`);
  }
  const { cert, key } = await readTlsFiles(section, tls);
  return { cert, key, ...(tls.minVersion ? { minVersion: tls.minVersion } : {}), ...(tls.groups ? { groups: tls.groups } : {}) };
}

/**
 * SIGHUP: gives a running server a re-read certificate and key for its new connections
 * (open ones keep theirs). False when the server is plain HTTP. Throws, changing nothing,
 * when the key does not fit the certificate.
 */
export function useNewCertificate(server: unknown, tls: ServingTls): boolean {
  const https = server as { setSecureContext?: (options: object) => void } | undefined;
  if (!https?.setSecureContext) return false;
  https.setSecureContext({ cert: tls.cert, key: tls.key, minVersion: tls.minVersion ?? 'TLSv1.3', ecdhCurve: tls.groups ?? defaultGroups() });
  return true;
}
