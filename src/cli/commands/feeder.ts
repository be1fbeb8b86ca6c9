// `qentropy feeder status [--config FILE] [--json]`: what the running daemon's feeder is
// doing, read from the status file it rewrites every few seconds (feeder.status.file,
// default /var/lib/qentropy/feeder-status.json). Works without network access and
// without privileges. Exit 0 when running and fed, 1 when stopped or stale, 3 when a sink
// or source needs attention.
import type { Command } from 'commander';

import { ConfigError, loadConfig } from '../../config/index.js';
import { readStatusFile, type FeederStatus } from '../../feeder/index.js';
import { CliError } from '../errors.js';

export interface FeederStatusOptions {
  config?: string;
  /** Read this status file instead of the one the config names. */
  file?: string;
  now?: number;
}

export interface FeederStatusReport {
  file: string;
  status: FeederStatus;
  /** The writing process is alive and wrote within three intervals. */
  live: boolean;
  problems: string[];
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function feederStatus(options: FeederStatusOptions = {}): Promise<FeederStatusReport> {
  let file = options.file;
  let intervalMs = 5_000;
  if (!file) {
    try {
      const config = loadConfig(options.config !== undefined ? { file: options.config } : {});
      file = config.feeder.status.file;
      intervalMs = config.feeder.status.intervalMs;
    } catch (err) {
      if (err instanceof ConfigError) throw new CliError(err.message, 2);
      throw err;
    }
  }
  let status: FeederStatus;
  try {
    status = await readStatusFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      code === 'ENOENT' ? `no feeder status at ${file}: is the daemon running with the feeder role enabled?` : `cannot read ${file}: ${(err as Error).message}`,
    );
  }
  const now = options.now ?? Date.now();
  const problems: string[] = [];
  const live = status.running && processAlive(status.pid) && now - status.updatedAt < 3 * intervalMs + 1_000;
  if (!status.running) problems.push('the feeder has stopped');
  else if (!live) problems.push(`the status is stale (last written ${Math.round((now - status.updatedAt) / 1000)} s ago, pid ${status.pid})`);
  for (const s of status.sources) if (s.state !== 'active') problems.push(`source ${s.url} is ${s.state}${s.lastError ? `: ${s.lastError}` : ''}`);
  for (const k of status.sinks) {
    if (k.state === 'failing' || k.state === 'disabled') problems.push(`sink ${k.name} is ${k.state}: ${k.lastError ?? 'unknown error'}`);
  }
  return { file, status, live, problems };
}

function ago(ms: number | undefined, now: number): string {
  return ms === undefined ? 'never' : `${Math.max(0, Math.round((now - ms) / 1000))} s ago`;
}

export function formatFeederStatus(report: FeederStatusReport, now = Date.now()): string {
  const { status } = report;
  const out: string[] = [];
  out.push(`feeder: ${report.live ? 'running' : status.running ? 'not responding' : 'stopped'} (pid ${status.pid}, up ${Math.round((status.updatedAt - status.startedAt) / 1000)} s, status written ${ago(status.updatedAt, now)})`);
  out.push(
    `buffer: ${status.buffer.level} of ${status.buffer.capacity} bytes, ${status.buffer.locked ? 'locked in memory' : `not locked (${status.buffer.lockReason ?? 'unknown'})`}`,
  );
  const f = status.healthFailures;
  out.push(
    `pulled: ${status.bytesPulled} bytes, ${status.bytesPassed} passed; failed verdicts: RCT ${f['repetition-count']}, APT ${f['adaptive-proportion']}, ` +
      `pattern ${f.pattern}, FIPS 140-2 ${f.fips140}${status.buffer.bytesDiscarded ? `; ${status.buffer.bytesDiscarded} bytes emptied from the buffer` : ''}`,
  );
  for (const s of status.sources) {
    const dropped = Object.entries(s.bytesDropped)
      .filter(([, n]) => n > 0)
      .map(([reason, n]) => `${reason} ${n}`);
    out.push(
      `source ${s.url}: ${s.state}, ${s.bytesPulled} bytes pulled, ${s.bytesPassed} passed, dropped: ${dropped.length ? dropped.join(', ') : 'none'}` +
        `${s.bytesAwaitingFips ? `, ${s.bytesAwaitingFips} awaiting a FIPS block` : ''}${s.lastError ? `; last error: ${s.lastError}` : ''}`,
    );
  }
  if (status.combine) {
    const c = status.combine;
    const what = c.state === 'combining' ? `SHA-256 over ${c.inUse.length} source${c.inUse.length === 1 ? '' : 's'}` : c.state === 'stopped' ? 'stopped (a source is out; onDropOut "stop")' : 'no source in use';
    out.push(
      `combining: ${what}, ${c.outputs} outputs, credit ${c.credit.creditBitsPerByte} bits per byte (${c.credit.outputEntropyBits.toFixed(2)} of 256 per output)` +
        `${c.droppedOut.length ? `; out: ${c.droppedOut.join(', ')}` : ''}${c.dropOuts ? `; ${c.dropOuts} drop-out${c.dropOuts === 1 ? '' : 's'}` : ''}`,
    );
  }
  for (const k of status.sinks) {
    const credit = k.kind === 'kernel' ? `, ${k.creditedBits} bits credited` : '';
    out.push(
      `sink ${k.name}: ${k.state}, ${k.feeds} feeds, ${k.bytesFed} bytes${credit}, last fed ${ago(k.lastFeedAt, now)}${k.errors ? `, ${k.errors} errors; last: ${k.lastError}` : ''}`,
    );
  }
  for (const p of report.problems) out.push(`attention: ${p}`);
  return `${out.join('\n')}\n`;
}

export function registerFeeder(program: Command): void {
  const feeder = program.command('feeder').description('the kernel/HSM feeder of the running daemon');
  feeder
    .command('status')
    .description("show the running feeder's sources, sinks, buffer and errors")
    .option('--config <file>', 'config file (default $QENTROPY_CONFIG or /etc/qentropy/qentropy.json)')
    .option('--status-file <file>', 'read this status file instead of the one the config names')
    .option('--json', 'print the status as JSON')
    .action(async (opts: { config?: string; statusFile?: string; json?: boolean }) => {
      const report = await feederStatus({ ...(opts.config ? { config: opts.config } : {}), ...(opts.statusFile ? { file: opts.statusFile } : {}) });
      process.stdout.write(opts.json ? `${JSON.stringify({ ...report.status, live: report.live, problems: report.problems }, null, 2)}\n` : formatFeederStatus(report));
      if (!report.live) throw new CliError('the feeder is not running', 1);
      if (report.problems.length > 0) throw new CliError(`${report.problems.length} problem(s) need attention (see above)`, 3);
    });
}
