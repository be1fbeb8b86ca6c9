// Talks to systemd when it started us as Type=notify: READY=1 once every role runs,
// WATCHDOG=1 at half the WatchdogSec interval, STOPPING=1 on the way out, STATUS= lines.
// Node has no unix datagram sockets, so the message goes through the native helper in
// native/sdnotify; without it (an old build), `systemd-notify` is run instead, which needs
// NotifyAccess=all in the unit. Outside systemd ($NOTIFY_SOCKET unset) all of it is a no-op.
import { spawn } from 'node:child_process';

import { addon } from '../native/addon.js';

export interface SystemdNotifier {
  /** True when systemd asked for notifications. */
  readonly active: boolean;
  notify(state: string): void;
  ready(status?: string): void;
  stopping(): void;
  /** Starts WATCHDOG=1 pings when $WATCHDOG_USEC is set (and meant for this process). */
  startWatchdog(isHealthy?: () => boolean): void;
  stopWatchdog(): void;
}

export function systemdNotifier(env: NodeJS.ProcessEnv = process.env): SystemdNotifier {
  const socket = env.NOTIFY_SOCKET;
  let watchdog: NodeJS.Timeout | undefined;
  const send = (state: string): void => {
    if (!socket) return;
    if (typeof addon.sdNotify === 'function') {
      addon.sdNotify(socket, state);
      return;
    }
    const child = spawn('systemd-notify', [...state.split('\n').filter(Boolean)], { stdio: 'ignore' });
    child.on('error', () => undefined);
    child.unref();
  };
  return {
    active: Boolean(socket),
    notify: send,
    ready(status) {
      send(`READY=1\nMAINPID=${process.pid}${status ? `\nSTATUS=${status}` : ''}`);
    },
    stopping() {
      send('STOPPING=1');
    },
    startWatchdog(isHealthy) {
      const usec = Number(env.WATCHDOG_USEC);
      const forPid = env.WATCHDOG_PID ? Number(env.WATCHDOG_PID) : process.pid;
      if (!socket || !Number.isFinite(usec) || usec <= 0 || forPid !== process.pid) return;
      const everyMs = Math.max(100, Math.floor(usec / 2000));
      watchdog = setInterval(() => {
        // A stuck event loop never gets here, so systemd restarts us; a role that reports
        // itself unhealthy withholds the ping on purpose.
        if (!isHealthy || isHealthy()) send('WATCHDOG=1');
      }, everyMs);
      watchdog.unref();
    },
    stopWatchdog() {
      if (watchdog) clearInterval(watchdog);
      watchdog = undefined;
    },
  };
}
