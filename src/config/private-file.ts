// Secrets kept in files (the KME site key and link PSKs, access tokens, HSM PINs) are
// refused when group or others may read or write them, with one message shape:
//   "<what> <file> is accessible to other users (mode 644); chmod 600 it"
// The file's owner is not checked: a root-owned 0600 file is what a root daemon reads,
// and the service user's own 0600 file is what `qentropy daemon` reads under systemd.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';

/** Throws when `mode` lets group or others in. `what` names the file's role, e.g. 'PIN file'. */
export function refuseSharedFile(what: string, file: string, mode: number): void {
  if ((mode & 0o077) !== 0) {
    throw new Error(`${what} ${file} is accessible to other users (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
  }
}

/**
 * Reads a secret file after checking its mode (on the open file, so a swap between the
 * check and the read cannot slip a shared file in). Errors other than a loose mode are the
 * file system's (ENOENT, EACCES) with their code.
 */
export async function readPrivateFile(what: string, file: string): Promise<Buffer> {
  const handle = await fs.open(file, 'r');
  try {
    refuseSharedFile(what, file, (await handle.stat()).mode);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** readPrivateFile for synchronous callers (command-line set-up). */
export function readPrivateFileSync(what: string, file: string): Buffer {
  const fd = fsSync.openSync(file, 'r');
  try {
    refuseSharedFile(what, file, fsSync.fstatSync(fd).mode);
    return fsSync.readFileSync(fd);
  } finally {
    fsSync.closeSync(fd);
  }
}
