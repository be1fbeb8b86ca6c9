// Keeps the feeder's buffer out of swap and core dumps when the system allows it, through
// the small native helper in native/memlock (Node has no mlock). Failure is not fatal:
// the buffer still works, and the status says it is not locked and why.
import { addon } from '../native/addon.js';
import { errnoName } from '../native/errno.js';

export interface LockResult {
  locked: boolean;
  /** Why it is not locked (errno name and what to change), when it is not. */
  reason?: string;
}

/** mlock(2) the pages of `buffer` and mark them MADV_DONTDUMP. */
export function lockMemory(buffer: Uint8Array): LockResult {
  if (typeof addon.memLock !== 'function') {
    return { locked: false, reason: 'this build of the native addon has no memlock helper (rebuild it)' };
  }
  const rc = addon.memLock(buffer) as number;
  if (typeof addon.memDontDump === 'function') addon.memDontDump(buffer);
  if (rc === 0) return { locked: true };
  const name = errnoName(rc);
  const hint =
    name === 'ENOMEM' || name === 'EPERM'
      ? ': RLIMIT_MEMLOCK is too small (raise LimitMEMLOCK= or grant CAP_IPC_LOCK), or lower feeder.buffer.capacityBytes'
      : '';
  return { locked: false, reason: `mlock failed with ${name}${hint}` };
}

/** munlock(2) the pages again (before the buffer is released). */
export function unlockMemory(buffer: Uint8Array): void {
  if (typeof addon.memUnlock === 'function') addon.memUnlock(buffer);
}
