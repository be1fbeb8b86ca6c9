// flock(2) on an open descriptor, through native/filelock (Node cannot call it itself).
import { addon } from './addon.js';

/** Takes an exclusive lock without waiting: 0, or the errno value (EWOULDBLOCK: held elsewhere). */
export function tryLockFile(fd: number): number {
  return addon.tryLockFile(fd) as number;
}

/** Gives the lock back (closing the descriptor does too): 0 or the errno value. */
export function unlockFile(fd: number): number {
  return addon.unlockFile(fd) as number;
}
