// Who can change what a unit runs: ExecStart= names a Node binary and a script, and the
// service runs them as root-started qentropy (the feeder with CAP_SYS_ADMIN). If a non-root
// user can write either file or any directory above it, that user can put their own code
// there. This finds such paths; `service install` refuses them unless told otherwise.
import { lstatSync, realpathSync, type Stats } from 'node:fs';
import path from 'node:path';

/** What makes one path writable by a non-root user, or undefined when only root can change it. */
function writableByOthers(st: Stats): string | undefined {
  if (st.uid !== 0) return `is owned by uid ${st.uid}`;
  // A symbolic link's own mode bits mean nothing; its owner and directory are what count.
  if (st.isSymbolicLink()) return undefined;
  const sticky = (st.mode & 0o1000) !== 0;
  // A sticky directory (/tmp) lets others add entries but not replace root's.
  if ((st.mode & 0o002) !== 0 && !(st.isDirectory() && sticky)) return 'is writable by every user';
  if ((st.mode & 0o020) !== 0 && st.gid !== 0 && !(st.isDirectory() && sticky)) return `is writable by group ${st.gid}`;
  return undefined;
}

/** `file` and every directory above it, for the path as given and as resolved through links. */
function chain(file: string): string[] {
  const paths = new Set<string>();
  let resolved = file;
  try {
    resolved = realpathSync(file);
  } catch {
    // A missing file is reported by whoever runs it; its directories are still checked.
  }
  for (const start of [file, resolved]) {
    for (let p = path.resolve(start); ; p = path.dirname(p)) {
      paths.add(p);
      if (p === path.dirname(p)) break;
    }
  }
  return [...paths];
}

/**
 * One line per path among `files` (and their directories) that a non-root user could
 * change, e.g. "/home/ann/.nvm/versions/node/v24/bin/node is owned by uid 1000".
 */
export function unsafeExecPaths(files: readonly string[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const file of files) {
    for (const p of chain(file)) {
      if (seen.has(p)) continue;
      seen.add(p);
      let st: Stats;
      try {
        st = lstatSync(p);
      } catch {
        continue;
      }
      const why = writableByOthers(st);
      if (why) problems.push(`${p} ${why}`);
    }
  }
  return problems;
}
