// `qentropy daemon --config FILE`: runs the roles the config enables (entropy, quality,
// kme, feeder; src/roles). SIGTERM/SIGINT drain and exit
// within 5 s; SIGHUP reloads what can change without a restart.
import type { Command } from 'commander';
import pino from 'pino';

import { ConfigError, loadConfig } from '../../config/index.js';
import { AVAILABLE_ROLES, buildRoles, runRoles } from '../../roles/index.js';
import { createNativeTester } from '../../sources/native-tester.js';
import { CliError } from '../errors.js';

export interface DaemonOptions {
  config?: string;
  logLevel?: string;
}

/** Runs the daemon until a stop signal; resolves with the exit code. */
export async function runDaemon(options: DaemonOptions): Promise<number> {
  let config;
  try {
    config = loadConfig({
      ...(options.config !== undefined ? { file: options.config } : {}),
      ...(options.logLevel !== undefined ? { overrides: { 'log.level': options.logLevel } } : {}),
    });
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, 2);
    throw err;
  }
  const logger = pino({
    level: config.log.level,
    base: { pid: process.pid, service: 'qentropy' },
    redact: {
      paths: ['authorization', '*.authorization', 'req.headers.authorization', 'token', '*.token'],
      censor: '[redacted]',
    },
  });
  const roles = await buildRoles(
    config,
    { logger, stateDir: config.stateDir },
    { createTester: (minEntropy) => createNativeTester(minEntropy) },
  );
  if (roles.length === 0) {
    throw new CliError(`no role is enabled in ${config.file ?? 'the config'} (set "enabled": true in one of: ${AVAILABLE_ROLES.join(', ')})`, 2);
  }
  try {
    return await runRoles(roles, logger);
  } catch (err) {
    throw new CliError(`daemon failed to start: ${(err as Error).message.split('\n', 1)[0]}`, 1);
  }
}

export function registerDaemon(program: Command): void {
  program
    .command('daemon')
    .description('run the roles the config file enables (entropy, quality, kme, feeder)')
    .option('--config <file>', 'config file (default $QENTROPY_CONFIG or /etc/qentropy/qentropy.json)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent')
    .action(async (opts: DaemonOptions) => {
      const code = await runDaemon(opts);
      // Roles have released what they hold; if a stray handle would keep the process
      // alive past the drain, leave anyway (the timer itself does not hold the loop).
      setTimeout(() => process.exit(code), 500).unref();
      if (code !== 0) throw new CliError('stopped without draining in time', code);
    });
}
