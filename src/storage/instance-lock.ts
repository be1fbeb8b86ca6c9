// One serving process per SQLite file and role. SQLite is the single-instance engine
// (docs/storage.md): a role may keep state for the database in its process memory, such as
// the entropy service's rate-limit windows, which is exact only while no other process
// serves the same role from the same file. This lock makes that a checked rule instead of
// a hope: a second `qentropy daemon` on the same database refuses to start, and says why.
//
// The lock is flock(2) on `<database>-<role>.lock`, held through an open descriptor, so it
// goes away with the process however it ends (no stale lock to clean up after a crash).
// Processes that only read or make occasional writes (the `token` and `account` commands)
// take no lock and run beside the daemon as before.
import fs from 'node:fs';
import os from 'node:os';

import { errnoName } from '../native/errno.js';
import { tryLockFile } from '../native/filelock.js';

export class InstanceLock {
  private constructor(
    readonly path: string,
    private fd: number | undefined,
  ) {}

  /**
   * Takes the lock for serving `role` from the SQLite database `databaseFile`, or throws a
   * one-line error naming the process that holds it.
   */
  static acquire(databaseFile: string, role: string): InstanceLock {
    const path = `${databaseFile}-${role}.lock`;
    const fd = fs.openSync(path, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
    const rc = tryLockFile(fd);
    if (rc !== 0) {
      const holder = rc === os.constants.errno.EWOULDBLOCK ? readHolder(fd) : undefined;
      fs.closeSync(fd);
      if (rc === os.constants.errno.EWOULDBLOCK) {
        throw new Error(
          `another qentropy process${holder ? ` (pid ${holder})` : ''} already serves the ${role} role from ${databaseFile}; ` +
            'a SQLite database has one serving process (use PostgreSQL in storage.url to run several instances)',
        );
      }
      throw new Error(`cannot lock ${path}: ${errnoName(rc)}`);
    }
    // Who holds it, for the message another process shows; the lock is what counts.
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, `${process.pid}\n`, 0);
    return new InstanceLock(path, fd);
  }

  /** Releases the lock (closing its descriptor). The file stays: removing it could race a new holder. */
  release(): void {
    if (this.fd === undefined) return;
    fs.closeSync(this.fd);
    this.fd = undefined;
  }
}

function readHolder(fd: number): string | undefined {
  const buffer = Buffer.alloc(32);
  const n = fs.readSync(fd, buffer, 0, buffer.length, 0);
  const pid = buffer.subarray(0, n).toString('ascii').trim();
  return /^\d+$/.test(pid) ? pid : undefined;
}
