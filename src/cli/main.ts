// The `qentropy` command line: one program, several roles and tool commands
// (docs/cli.md). Each command lives in ./commands and is also a library function.
import { Command, CommanderError } from 'commander';

import { packageVersion } from '../package-version.js';
import { CliError } from './errors.js';

type Register = (program: Command) => void;

// Each command's module is loaded only when the command line can need it: `qentropy
// daemon` running a feeder on a small host does not load the KME's certificate code, the
// quality store or the account database (docs/feeder.md, "Memory"). In help order.
const COMMANDS: Record<string, () => Promise<Register>> = {
  version: async () => (await import('./commands/version.js')).registerVersion,
  token: async () => (await import('./commands/token.js')).registerToken,
  fetch: async () => (await import('./commands/fetch.js')).registerFetch,
  daemon: async () => (await import('./commands/daemon.js')).registerDaemon,
  sts: async () => (await import('./commands/sts.js')).registerSts,
  ea: async () => (await import('./commands/ea.js')).registerEa,
  pki: async () => (await import('./commands/pki.js')).registerPki,
  kme: async () => (await import('./commands/kme.js')).registerKme,
  quality: async () => (await import('./commands/quality.js')).registerQuality,
  feeder: async () => (await import('./commands/feeder.js')).registerFeeder,
  service: async () => (await import('./commands/service.js')).registerService,
};

/**
 * The program with every command, or, when `command` names one, with that command alone
 * (its parsing, help and errors are the same either way).
 */
export async function buildProgram(command?: string): Promise<Command> {
  const program = new Command('qentropy')
    .description('qentropy: entropy service, NIST STS quality service, ETSI 014 KME and kernel/HSM feeder')
    .version(packageVersion(), '-V, --version-number', 'print the package version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  const names = command !== undefined && Object.hasOwn(COMMANDS, command) ? [command] : Object.keys(COMMANDS);
  for (const name of names) (await COMMANDS[name]!())(program);
  return program;
}

/** Runs the CLI; resolves to the process exit code. Errors are one line on stderr. */
/**
 * A reader that stops early (`qentropy sts FILE --json | head`) closes the pipe under us:
 * stop quietly with the status a Unix tool killed by SIGPIPE has (128 + 13), instead of
 * dying on an unhandled 'error' event with a stack trace.
 */
function stopOnClosedPipe(err: NodeJS.ErrnoException): void {
  if (err.code === 'EPIPE') process.exit(141);
  throw err;
}

export async function main(argv: string[]): Promise<number> {
  if (!process.stdout.listeners('error').includes(stopOnClosedPipe)) process.stdout.on('error', stopOnClosedPipe);
  try {
    const program = await buildProgram(argv[0]);
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
