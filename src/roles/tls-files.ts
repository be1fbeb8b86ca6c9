import fs from 'node:fs/promises';

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
