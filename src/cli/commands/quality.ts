// `qentropy quality run` (one run now, stored like a scheduled one) and
// `qentropy quality report [ID]` (a stored run as NIST's finalAnalysisReport.txt, and with
// --html FILE as the quality page's self-contained HTML report).
// Each is also a library function below. See docs/quality.md.
import fs from 'node:fs';

import type { Command } from 'commander';

import { ConfigError, loadConfig, type QentropyConfig } from '../../config/index.js';
import { QualityRunner } from '../../quality/run.js';
import { EntropyApiSource, OwnPoolSource, type QualityBitSource } from '../../quality/sources.js';
import { QualityStore } from '../../quality/store.js';
import { formatRunReport } from '../../quality/text-report.js';
import { buildRunView, writeHtmlReport, type RunViewInput } from '../../quality-page/index.js';
import { createNativeTester } from '../../sources/native-tester.js';
import { createSource, parseSourceSpec } from '../../sources/index.js';
import { openDatabase, type Db } from '../../storage/db.js';
import { readPrivateFileSync } from '../../config/private-file.js';
import { CliError } from '../errors.js';

/** Exit code of `quality run` when the run completed but failed the published criteria. */
export const EXIT_FAILED_CRITERIA = 3;

interface CommonOptions {
  config?: string;
  storage?: string;
  json?: boolean;
}

export interface QualityReportOptions extends CommonOptions {
  /** Also write the run as a self-contained HTML file here. */
  html?: string;
}

export interface QualityRunOptions extends CommonOptions {
  streams?: string;
  bits?: string;
  threads?: string;
  /** hwrng | device:PATH | rdseed | getrandom (default quality.localSource, else entropy.source). */
  source?: string;
  /** A remote entropy API to audit instead of a local source. */
  url?: string;
  tokenFile?: string;
  caFile?: string;
}

function readConfig(options: CommonOptions): QentropyConfig {
  try {
    return loadConfig(options.config !== undefined ? { file: options.config } : {});
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, 2);
    throw err;
  }
}

async function openStore(url: string): Promise<{ db: Db; store: QualityStore }> {
  let db: Db;
  try {
    db = await openDatabase({ url });
  } catch (err) {
    throw new CliError(`storage: ${(err as Error).message}`);
  }
  try {
    return { db, store: await QualityStore.open(db) };
  } catch (err) {
    await db.close();
    throw new CliError(`storage: ${(err as Error).message}`);
  }
}

function positiveInt(text: string | undefined, flag: string, fallback: number, min = 1): number {
  if (text === undefined) return fallback;
  if (!/^[0-9]+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text))) {
    throw new CliError(`${flag} '${text}': expected an integer >= ${min}`);
  }
  return Number(text);
}

/**
 * Says at once why the entropy API does not answer (connection refused, 503, ...) instead of
 * staying silent until the draw timeout: the first failure always, each retry on a terminal.
 */
function reportRetries(drawTimeoutSeconds: number, err: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr) {
  return ({ error, attempt, delayMs }: { error: Error; attempt: number; delayMs: number }): void => {
    if (attempt === 1) {
      err.write(`qentropy: entropy API: ${error.message}; retrying for up to ${drawTimeoutSeconds} s (quality.drawTimeoutSeconds)\n`);
    } else if (err.isTTY === true) {
      err.write(`qentropy: entropy API: attempt ${attempt} failed: ${error.message}; next in ${(delayMs / 1000).toFixed(1)} s\n`);
    }
  };
}

function bitSource(options: QualityRunOptions, config: QentropyConfig): QualityBitSource {
  const q = config.quality;
  const url = options.url ?? (q.source === 'entropy-api' && !options.source ? q.entropyApi?.url : undefined);
  if (url) {
    const tokenFile = options.tokenFile ?? (options.url ? undefined : q.entropyApi?.tokenFile);
    let token = process.env.QENTROPY_TOKEN ?? (options.url ? undefined : q.entropyApi?.token);
    if (tokenFile) {
      try {
        token = readPrivateFileSync('--token-file', tokenFile).toString('utf8').trim();
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw new CliError(code ? `--token-file: cannot read ${tokenFile}: ${code}` : (err as Error).message);
      }
    }
    if (!token) throw new CliError('an entropy API needs a token: set QENTROPY_TOKEN or pass --token-file');
    const caFile = options.caFile ?? (options.url ? undefined : q.entropyApi?.caFile);
    return new EntropyApiSource({
      url,
      token,
      ...(caFile ? { ca: fs.readFileSync(caFile) } : {}),
      onRetry: reportRetries(q.drawTimeoutSeconds),
    });
  }
  const specText = options.source ?? q.localSource ?? config.entropy.source;
  let spec;
  try {
    spec = parseSourceSpec(specText);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  if (spec.kind === 'upstream') throw new CliError('source upstream: pass --url of the entropy API to audit instead');
  return new OwnPoolSource(createSource(spec, { createTester: () => createNativeTester(config.entropy.health.minEntropyPerByte) }));
}

/** One run now; prints the report and resolves to the exit code (0 passed, 3 failed criteria). */
export async function runQualityOnce(options: QualityRunOptions, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const config = readConfig(options);
  const q = config.quality;
  const streams = positiveInt(options.streams, '--streams', q.streams);
  const bitsPerStream = positiveInt(options.bits, '--bits', q.bitsPerStream, 8);
  if (bitsPerStream % 8 !== 0) throw new CliError(`--bits '${bitsPerStream}': must be a multiple of 8`);
  const threads = positiveInt(options.threads, '--threads', q.threads, 0);
  const source = bitSource(options, config);
  const { db, store } = await openStore(options.storage ?? config.storage.url);
  const stop = new AbortController();
  const onSignal = (): void => stop.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const runner = new QualityRunner({
      store,
      source,
      streams,
      bitsPerStream,
      threads,
      drawTimeoutMs: q.drawTimeoutSeconds * 1000,
      passingDataRetentionMs: q.passingDataRetentionDays * 86_400_000,
    });
    const outcome = await runner.run(stop.signal);
    const report = await store.getReport(outcome.id);
    out.write(options.json ? `${JSON.stringify({ id: outcome.id, ...report }, null, 2)}\n` : formatRunReport({ id: outcome.id, ...report }));
    if (outcome.status === 'error') throw new CliError(`run ${outcome.id} failed: ${outcome.error}`);
    return outcome.record.tests_passed ? 0 : EXIT_FAILED_CRITERIA;
  } catch (err) {
    if (stop.signal.aborted) throw new CliError('interrupted; nothing was stored', 130);
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await source.close();
    await db.close();
  }
}

/** Prints a stored run's report (the newest when `id` is omitted). */
export async function printQualityReport(id: string | undefined, options: QualityReportOptions, out: NodeJS.WritableStream = process.stdout): Promise<void> {
  if (id !== undefined && (!/^[0-9]{1,15}$/.test(id) || Number(id) < 1)) throw new CliError(`run id '${id}': expected a positive integer`);
  const url = options.storage ?? readConfig(options).storage.url;
  const { db, store } = await openStore(url);
  try {
    const runId = id !== undefined ? Number(id) : await store.latestRunId();
    if (runId === undefined) throw new CliError('no quality run is stored yet');
    const report = await store.getReport(runId);
    if (!report) throw new CliError(`no quality run ${runId}`);
    if (options.html !== undefined) {
      try {
        await writeHtmlReport(options.html, buildRunView({ id: runId, ...(report as RunViewInput) }));
      } catch (err) {
        throw new CliError(`--html: cannot write ${options.html}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      process.stderr.write(`qentropy: wrote the HTML report of run ${runId} to ${options.html}\n`);
    }
    out.write(options.json ? `${JSON.stringify({ id: runId, ...report }, null, 2)}\n` : formatRunReport({ id: runId, ...report }));
  } finally {
    await db.close();
  }
}

export function registerQuality(program: Command): void {
  const quality = program.command('quality').description('NIST STS quality runs: run one now, or print a stored report');
  quality
    .command('run')
    .description('draw M x N bits, run the NIST battery, store the record and print the report (exit 3: failed criteria)')
    .option('--config <file>', 'config file (default $QENTROPY_CONFIG or /etc/qentropy/qentropy.json)')
    .option('--storage <url>', 'storage URL, overriding the config: sqlite:PATH or postgres://...')
    .option('--streams <M>', 'number of sequences (default quality.streams, 100)')
    .option('--bits <N>', 'bits per sequence, a multiple of 8 (default quality.bitsPerStream, 1000000)')
    .option('--threads <T>', 'battery worker threads, 0 = every core (default quality.threads)')
    .option('--source <spec>', 'local source: hwrng, device:PATH, rdseed or getrandom')
    .option('--url <url>', 'audit a remote entropy API instead (token from QENTROPY_TOKEN or --token-file)')
    .option('--token-file <file>', 'file holding the entropy API access token')
    .option('--ca-file <file>', 'PEM CA to trust for the entropy API')
    .option('--json', 'print the stored per-run report as JSON')
    .action(async (opts: QualityRunOptions) => {
      const code = await runQualityOnce(opts);
      if (code !== 0) throw new CliError('the run failed the published criteria (tests_passed: false)', code);
    });
  quality
    .command('report [id]')
    .description('print a stored run (default: the newest) as a NIST-style report')
    .option('--config <file>', 'config file (default $QENTROPY_CONFIG or /etc/qentropy/qentropy.json)')
    .option('--storage <url>', 'storage URL, overriding the config: sqlite:PATH or postgres://...')
    .option('--json', 'print the stored per-run report as JSON')
    .option('--html <file>', 'also write the run as one self-contained HTML report')
    .action(async (id: string | undefined, opts: QualityReportOptions) => {
      await printQualityReport(id, opts);
    });
}
