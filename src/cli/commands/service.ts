// `qentropy service install [--unit NAME ...] [--config FILE] [--root DIR] [--dry-run] [--allow-unsafe-path]`:
// writes the systemd units (ExecStart= = this Node and this installed qentropy), the
// sysusers.d and tmpfiles.d entries, and prints what to run next. See docs/daemon.md.
import type { Command } from 'commander';

import { planServiceInstall, UNITS, writeServiceFiles, type UnitName } from '../../service/index.js';
import { CliError } from '../errors.js';

interface InstallOptions {
  unit?: string[];
  config?: string;
  root?: string;
  dryRun?: boolean;
  allowUnsafePath?: boolean;
}

function units(values: string[] | undefined): UnitName[] | undefined {
  if (!values) return undefined;
  for (const v of values) {
    if (!(UNITS as readonly string[]).includes(v)) throw new CliError(`--unit must be one of ${UNITS.join(', ')}, got ${v}`);
  }
  return values as UnitName[];
}

export function registerService(program: Command): void {
  const service = program.command('service').description('install qentropy as a systemd service');
  service
    .command('install')
    .description('write the systemd units, the service user (sysusers.d) and its directories (tmpfiles.d)')
    .option('--unit <name...>', `units to install: ${UNITS.join(', ')} (default: both)`)
    .option('--config <file>', 'config file the daemon reads (default /etc/qentropy/qentropy.json)')
    .option('--root <dir>', 'write below this directory instead of / (as systemctl --root)', '/')
    .option('--dry-run', 'print what would be written, write nothing')
    .option('--allow-unsafe-path', 'install even if a non-root user can change the Node binary, the qentropy script or a directory above them')
    .action(async (opts: InstallOptions) => {
      let plan;
      try {
        plan = await planServiceInstall({ units: units(opts.unit), config: opts.config, root: opts.root ?? '/', allowUnsafePath: opts.allowUnsafePath === true });
      } catch (err) {
        if (err instanceof CliError) throw err;
        throw new CliError((err as Error).message);
      }
      const root = opts.root ?? '/';
      for (const p of plan.unsafe) {
        process.stderr.write(`qentropy: warning: --allow-unsafe-path: ${p}; a non-root user can change the code the service runs\n`);
      }
      for (const p of plan.hidden) {
        process.stderr.write(`qentropy: warning: ${p} is under a directory the units hide (ProtectHome=, PrivateTmp=); install qentropy and Node system-wide\n`);
      }
      if (opts.dryRun) {
        for (const file of plan.files) {
          process.stdout.write(`# ${file.path} (mode ${file.mode.toString(8).padStart(4, '0')})\n${file.content.trimEnd()}\n\n`);
        }
        process.stdout.write(`# then run:\n${plan.next.join('\n')}\n`);
        return;
      }
      let written: string[];
      try {
        written = await writeServiceFiles(plan, root);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        throw new CliError(e.code === 'EACCES' || e.code === 'EPERM' ? `cannot write ${e.path ?? root}: run as root (sudo qentropy service install)` : e.message);
      }
      process.stdout.write(`${written.map((f) => `wrote ${f}`).join('\n')}\nExecStart=${plan.execStart}\nnext, as root:\n${plan.next.map((c) => `  ${c}`).join('\n')}\n`);
    });
}
