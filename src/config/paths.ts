// Relative paths in a config file name files beside that file, as in systemd units, nginx
// and most daemons: a config written next to its certificates works from any directory.
// Each section declares which of its keys hold paths (ConfigSection.paths); values that
// come from the environment or the command line are left as given (relative to the
// current directory, as a shell user expects).
import path from 'node:path';

import { parseStorageUrl } from '../storage/db.js';

/** How a key's value names a file: a plain path, or a storage URL (`sqlite:PATH` or a bare path). */
export type PathKind = 'file' | 'storage-url';

/** Dotted key patterns relative to a section; `*` matches every member of an object or array. */
export type PathKeys = Readonly<Record<string, PathKind>>;

function resolveValue(value: string, kind: PathKind, baseDir: string): string {
  if (kind === 'file') return value === '' || path.isAbsolute(value) ? value : path.resolve(baseDir, value);
  let parsed;
  try {
    parsed = parseStorageUrl(value);
  } catch {
    return value; // reported by validation, with its key
  }
  if (parsed.engine !== 'sqlite' || parsed.file === ':memory:' || path.isAbsolute(parsed.file)) return value;
  return `sqlite:${path.resolve(baseDir, parsed.file)}`;
}

function visit(node: unknown, parts: readonly string[], kind: PathKind, baseDir: string): void {
  if (typeof node !== 'object' || node === null) return;
  const [head, ...rest] = parts;
  const obj = node as Record<string, unknown>;
  const keys = head === '*' ? Object.keys(obj) : head !== undefined && Object.hasOwn(obj, head) ? [head] : [];
  for (const key of keys) {
    if (rest.length === 0) {
      if (typeof obj[key] === 'string') obj[key] = resolveValue(obj[key] as string, kind, baseDir);
    } else {
      visit(obj[key], rest, kind, baseDir);
    }
  }
}

/** Rewrites, in place, the relative paths at `keys` under `root` to absolute ones under `baseDir`. */
export function resolvePathsIn(root: unknown, keys: PathKeys, baseDir: string): void {
  for (const [pattern, kind] of Object.entries(keys)) visit(root, pattern.split('.'), kind, baseDir);
}
