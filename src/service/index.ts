// `qentropy service install`: puts the shipped systemd units, the sysusers.d entry for the
// service user and the tmpfiles.d entry for its directories in place, with ExecStart= set
// to the Node binary and the qentropy script that are running this command. The Node
// binary is named explicitly, not found through the script's `#!/usr/bin/env node`: the
// service must run on the Node that installed the package (better-sqlite3 is compiled for
// its ABI), whatever systemd's PATH holds. See docs/daemon.md.
import fs from 'node:fs/promises';
import path from 'node:path';

import { DEFAULT_CONFIG_FILE } from '../config/index.js';
import { packageRoot } from '../native/addon.js';
import { unsafeExecPaths } from './path-safety.js';

export const UNITS = ['qentropy', 'qentropy-feeder'] as const;
export type UnitName = (typeof UNITS)[number];

export interface ServiceInstallOptions {
  /** Which units to write (default: both). */
  units?: readonly UnitName[];
  /** Prefix for every path written, as `systemctl --root` (default `/`). */
  root?: string;
  /** The config file the daemon reads (default /etc/qentropy/qentropy.json). */
  config?: string;
  /** The Node binary of ExecStart= (default: the one running now). */
  node?: string;
  /** The qentropy script of ExecStart= (default: the one running now, symlinks resolved). */
  script?: string;
  /**
   * Write the units even when a non-root user can change the Node binary, the script or a
   * directory above them (`--allow-unsafe-path`); by default that is refused.
   */
  allowUnsafePath?: boolean;
}

export interface ServiceFile {
  /** Where it goes on the target system (without the root prefix). */
  path: string;
  mode: number;
  content: string;
}

export interface ServicePlan {
  files: ServiceFile[];
  execStart: string;
  /** Paths systemd's sandbox of these units will not see (ProtectHome=, PrivateTmp=). */
  hidden: string[];
  /** Paths a non-root user could change (only with allowUnsafePath; else planning fails). */
  unsafe: string[];
  /** What to run afterwards, in order. */
  next: string[];
}

/** systemd's quoting for one ExecStart= word. */
function quote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `"${word.replace(/(["\\])/g, '\\$1').replace(/\$/g, '$$$$')}"`;
}

/** POSIX shell quoting for a path printed in a command the user will paste. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The commands to run after writing, acting on what was written: on the host for `/`;
 * below DIR for `--root DIR` (the same tools' own `--root=`). A manager is not running
 * inside DIR, so there is no daemon-reload or --now there: the units start when DIR boots.
 */
function nextSteps(units: readonly UnitName[], root: string): string[] {
  const services = units.map((u) => `${u}.service`).join(' ');
  if (path.resolve(root) === '/') {
    return ['systemd-sysusers', 'systemd-tmpfiles --create', 'systemctl daemon-reload', `systemctl enable --now ${services}`];
  }
  const r = shellWord(`--root=${path.resolve(root)}`);
  return [`systemd-sysusers ${r}`, `systemd-tmpfiles --create ${r}`, `systemctl ${r} enable ${services}`];
}

// The comment the templates carry above ExecStart= describes the shipped default; a rendered
// unit says where its paths came from instead.
const TEMPLATE_EXEC_COMMENT = /(?:^#.*\n)*^ExecStart=.*$/m;

// ProtectHome=yes and PrivateTmp=yes in both units hide these from the service.
const HIDDEN_PREFIXES = ['/home/', '/root/', '/run/user/', '/tmp/', '/var/tmp/'];

async function template(name: string): Promise<string> {
  return fs.readFile(path.join(packageRoot, 'systemd', name), 'utf8');
}

/** The files `service install` writes, and the commands to run after it. */
export async function planServiceInstall(options: ServiceInstallOptions = {}): Promise<ServicePlan> {
  const units = options.units ?? UNITS;
  const node = options.node ?? process.execPath;
  const script = options.script ?? (await fs.realpath(process.argv[1] ?? path.join(packageRoot, 'bin', 'qentropy.js')));
  const config = options.config ?? DEFAULT_CONFIG_FILE;
  for (const p of [node, script, config]) {
    if (!path.isAbsolute(p)) throw new Error(`service install: ${p} is not an absolute path`);
  }
  const unsafe = unsafeExecPaths([node, script]);
  if (unsafe.length > 0 && !options.allowUnsafePath) {
    throw new Error(
      `service install: ${unsafe.join('; ')}: a non-root user could change the code the service runs (the feeder with CAP_SYS_ADMIN). ` +
        'Install Node and qentropy where only root can write (e.g. as root: npm install -g qentropy, with Node from the distribution), ' +
        'or pass --allow-unsafe-path to install anyway',
    );
  }
  const execStart = [node, script, 'daemon', '--config', config].map(quote).join(' ');

  const files: ServiceFile[] = [];
  for (const unit of units) {
    const text = await template(`${unit}.service`);
    if (!/^ExecStart=.*$/m.test(text)) throw new Error(`systemd/${unit}.service has no ExecStart= line`);
    files.push({
      path: `/etc/systemd/system/${unit}.service`,
      mode: 0o644,
      content: text.replace(
        TEMPLATE_EXEC_COMMENT,
        () => `# Written by \`qentropy service install\`: the Node binary and the qentropy script that ran it.\nExecStart=${execStart}`,
      ),
    });
  }
  files.push({ path: '/etc/sysusers.d/qentropy.conf', mode: 0o644, content: await template('qentropy.sysusers.conf') });
  files.push({ path: '/etc/tmpfiles.d/qentropy.conf', mode: 0o644, content: await template('qentropy.tmpfiles.conf') });

  const hidden = [node, script, config].filter((p) => HIDDEN_PREFIXES.some((prefix) => p.startsWith(prefix)));
  return {
    files,
    execStart,
    hidden,
    unsafe,
    next: nextSteps(units, options.root ?? '/'),
  };
}

/** Writes the plan's files under `root` (default `/`), creating directories; returns their paths. */
export async function writeServiceFiles(plan: ServicePlan, root = '/'): Promise<string[]> {
  const written: string[] = [];
  for (const file of plan.files) {
    const target = path.join(root, file.path);
    await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o755 });
    const tmp = `${target}.tmp-${process.pid}`;
    await fs.writeFile(tmp, file.content, { mode: file.mode });
    await fs.chmod(tmp, file.mode);
    await fs.rename(tmp, target);
    written.push(target);
  }
  return written;
}
