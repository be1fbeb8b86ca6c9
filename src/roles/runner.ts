// Runs a set of roles as one daemon: start in order (undoing the started ones if one
// fails), reload on SIGHUP, and on SIGTERM/SIGINT stop in reverse order with a deadline
// (default 5 s) so a stuck connection never keeps the process alive.
import type { Logger } from 'pino';

import { systemdNotifier } from '../feeder/sdnotify.js';
import type { Role } from './types.js';

export interface RunRolesOptions {
  /** Longest a graceful stop may take before the daemon gives up waiting (default 5 s). */
  stopTimeoutMs?: number;
  /** Where signals come from (tests pass an EventEmitter). */
  signals?: NodeJS.EventEmitter;
}

/** Starts `roles`; resolves with the exit code once a stop signal has been handled. */
export async function runRoles(roles: Role[], logger: Logger, options: RunRolesOptions = {}): Promise<number> {
  const signals = options.signals ?? process;
  const stopTimeoutMs = options.stopTimeoutMs ?? 5_000;
  const started: Role[] = [];
  try {
    for (const role of roles) {
      await role.start();
      started.push(role);
    }
  } catch (err) {
    logger.error({ err: (err as Error).message }, 'a role failed to start; stopping the others');
    await stopAll(started, logger, stopTimeoutMs);
    throw err;
  }
  logger.info({ roles: roles.map((r) => r.name) }, 'qentropy daemon running');
  // Under systemd (Type=notify): ready now, and watchdog pings while the event loop runs.
  const systemd = systemdNotifier();
  systemd.ready(`running: ${roles.map((r) => r.name).join(', ')}`);
  systemd.startWatchdog();

  // The daemon lives until it is told to stop, whatever its roles hold open. A feeder whose
  // only sink was disabled (a wrong HSM PIN) and whose buffer is full holds no timer or
  // socket, so Node found an empty event loop under a pending await and exited with 13:
  // under Restart=on-failure the wrong PIN was then retried every few seconds.
  const keepAlive = setInterval(() => undefined, 2 ** 31 - 1);

  return new Promise<number>((resolve) => {
    let stopping = false;
    const onStop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'stopping');
      systemd.stopping();
      systemd.stopWatchdog();
      void stopAll(started, logger, stopTimeoutMs).then((clean) => {
        signals.off('SIGTERM', onTerm);
        signals.off('SIGINT', onInt);
        signals.off('SIGHUP', onHup);
        clearInterval(keepAlive);
        resolve(clean ? 0 : 1);
      });
    };
    const onTerm = (): void => onStop('SIGTERM');
    const onInt = (): void => onStop('SIGINT');
    const onHup = (): void => {
      if (stopping) return;
      logger.info('SIGHUP: reloading');
      for (const role of started) {
        role.reload?.().catch((err: Error) => logger.error({ role: role.name, err: err.message }, 'reload failed'));
      }
    };
    signals.on('SIGTERM', onTerm);
    signals.on('SIGINT', onInt);
    signals.on('SIGHUP', onHup);
  });
}

/** Stops roles in reverse order; false when the deadline passed first. */
async function stopAll(roles: Role[], logger: Logger, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  const work = (async () => {
    for (const role of [...roles].reverse()) {
      try {
        await role.stop();
      } catch (err) {
        logger.error({ role: role.name, err: (err as Error).message }, 'role failed to stop cleanly');
      }
    }
    return true;
  })();
  const clean = await Promise.race([work, deadline]);
  clearTimeout(timer);
  if (!clean) logger.warn({ timeoutMs }, 'roles did not stop in time; exiting anyway');
  return clean;
}
