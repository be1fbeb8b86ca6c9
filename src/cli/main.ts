// The `qentropy` command line: one program, several roles and tool commands
// (docs/cli.md). Each command lives in ./commands and is also a library function.
import { Command, CommanderError } from 'commander';

import { versionInfo } from '../version.js';
import { registerSts } from './commands/sts.js';
import { registerDaemon } from './commands/daemon.js';
import { registerFeeder } from './commands/feeder.js';
import { registerFetch } from './commands/fetch.js';
import { registerKme } from './commands/kme.js';
import { registerPki } from './commands/pki.js';
import { registerQuality } from './commands/quality.js';
import { registerService } from './commands/service.js';
import { registerToken } from './commands/token.js';
import { registerVersion } from './commands/version.js';
import { CliError } from './errors.js';

export function buildProgram(): Command {
  const program = new Command('qentropy')
    .description('qentropy: entropy service, NIST STS quality service, ETSI 014 KME and kernel/HSM feeder')
    .version(versionInfo().package, '-V, --version-number', 'print the package version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerVersion(program);
  registerToken(program);
  registerFetch(program);
  registerDaemon(program);
  registerSts(program);
  registerPki(program);
  registerKme(program);
  registerQuality(program);
  registerFeeder(program);
  registerService(program);
  return program;
}

/** Runs the CLI; resolves to the process exit code. Errors are one line on stderr. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof CliError) {
      process.stderr.write(`qentropy: ${err.message}\n`);
      return err.exitCode;
    }
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`qentropy: ${message.split('\n')[0]}\n`);
    return 1;
  }
}
