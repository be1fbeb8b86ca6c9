// The native helpers that wrap a system call return 0 or an errno value; this names it.
import os from 'node:os';

/** 'EPERM' for EPERM's number, and so on; `errno N` for a number the platform does not name. */
export function errnoName(code: number): string {
  const names = os.constants.errno as Record<string, number>;
  return Object.keys(names).find((k) => names[k] === code) ?? `errno ${code}`;
}
