// `qentropy sts FILE`: the NIST SP 800-22 battery on a file, like NIST's `assess` but
// fast and non-interactive (docs/sts.md).
//   qentropy sts FILE [--format binary|ascii] [--bits N] [--streams M] [--contiguous] [--tests LIST]
//                [--param k=v]... [--threads T] [--json] [--html FILE]
// Prints a report shaped like NIST's finalAnalysisReport.txt (or JSON, product.md §5.4);
// a progress bar on stderr when it is a terminal; --html also writes the run as one
// self-contained HTML file (the quality page's run view). Exit 0 when the run completes (the
// verdict is in the output), 2 for bad input, 130 when interrupted.
import os from 'node:os';

import type { Command } from 'commander';

import { StsAbortError, StsInputError } from '../../sts/battery.js';
import { runBatteryOnFile, type SequenceFileLayout } from '../../sts/file.js';
import { formatReport, toJson } from '../../sts/report.js';
import { PARAM_NAMES, TEST_NAMES, type BatteryResult, type StsParams, type TestName } from '../../sts/types.js';
import { CliError } from '../errors.js';
import { progressBar } from '../progress.js';

interface StsCliOptions {
  format?: string;
  bits?: number;
  streams?: number;
  contiguous?: boolean;
  tests?: string;
  param: string[];
  threads?: number;
  json?: boolean;
  html?: string;
  progress?: boolean;
}

function positiveInteger(flag: string, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const v = value.replace(/_/g, '');
    if (!/^[0-9]+$/.test(v) || Number(v) < 1 || Number(v) > max) {
      throw new CliError(`${flag} must be an integer from 1 to ${max}`, 2);
    }
    return Number(v);
  };
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** "frequency,runs" or NIST's numbers "1,4"; "all" for every test. */
export function parseTestList(list: string): TestName[] {
  const names: TestName[] = [];
  for (const raw of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (raw === 'all') return [...TEST_NAMES];
    const byNumber = /^[0-9]+$/.test(raw) ? TEST_NAMES[Number(raw) - 1] : undefined;
    const name = byNumber ?? (TEST_NAMES as readonly string[]).find((t) => t === raw.replace(/-/g, '_'));
    if (!name) throw new CliError(`unknown test '${raw}' (known: ${TEST_NAMES.join(', ')} or 1..15)`, 2);
    names.push(name as TestName);
  }
  if (names.length === 0) throw new CliError('--tests lists no test', 2);
  return names;
}

/** --param k=v, repeated: NIST's parameter names (see docs/sts.md). */
export function parseParams(pairs: string[]): StsParams {
  const params: StsParams = {};
  for (const pair of pairs) {
    const m = /^([A-Za-z_]+)=([0-9]+)$/.exec(pair.trim());
    if (!m) throw new CliError(`--param takes name=value with an integer value, got '${pair}'`, 2);
    const key = m[1]!;
    if (!(PARAM_NAMES as string[]).includes(key)) {
      throw new CliError(`unknown parameter '${key}' (known: ${PARAM_NAMES.join(', ')})`, 2);
    }
    const value = Number(m[2]);
    if (!Number.isSafeInteger(value) || value < 1) throw new CliError(`parameter ${key} must be a positive integer`, 2);
    params[key as keyof StsParams] = value;
  }
  return params;
}

async function runStsCommand(file: string, opts: StsCliOptions): Promise<void> {
  if (opts.format !== undefined && opts.format !== 'binary' && opts.format !== 'ascii') {
    throw new CliError(`--format must be binary or ascii, got '${opts.format}'`, 2);
  }
  const tests = opts.tests === undefined ? undefined : parseTestList(opts.tests);
  const params = parseParams(opts.param);
  const threads = opts.threads ?? os.availableParallelism();
  const controller = new AbortController();
  const onSigint = () => controller.abort(new Error('interrupted'));
  process.once('SIGINT', onSigint);
  const showProgress = opts.progress !== false && process.stderr.isTTY === true;
  const bar = showProgress ? progressBar(process.stderr, 'sts') : undefined;
  let layout: SequenceFileLayout | undefined;
  try {
    const result = await runBatteryOnFile(file, {
      ...(opts.format ? { format: opts.format as 'binary' | 'ascii' } : {}),
      ...(opts.bits !== undefined ? { bits: opts.bits } : {}),
      ...(opts.streams !== undefined ? { streams: opts.streams } : {}),
      ...(opts.contiguous ? { contiguous: true } : {}),
      ...(tests ? { tests } : {}),
      params,
      threads,
      signal: controller.signal,
      onLayout: (l) => {
        layout = l;
      },
      // Short runs finish before a bar would be worth drawing.
      ...(bar ? { onProgress: ({ completed, total }) => layout && layout.bits * total >= 10_000_000 && bar.update(completed, total, `${completed}/${total} sequences`) } : {}),
    });
    bar?.done();
    const source = `${file} (${result.format})`;
    if (opts.html !== undefined) {
      await writeHtml(opts.html, result, source);
      process.stderr.write(`qentropy: wrote the HTML report to ${opts.html}\n`);
    }
    if (opts.json) process.stdout.write(`${JSON.stringify(toJson(result))}\n`);
    else process.stdout.write(formatReport(result, { source }));
  } catch (err) {
    bar?.done();
    if (err instanceof StsAbortError) throw new CliError('interrupted', 130);
    if (err instanceof StsInputError) throw new CliError(err.message, 2);
    throw err;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

/** The battery result as the quality page's run view, written whole to `file`. */
async function writeHtml(file: string, result: BatteryResult, source: string): Promise<void> {
  // Loaded here, not at the top: the page's modules (routes, event stream, assets) are
  // start-up cost that a plain `qentropy sts` run should not pay.
  const { buildRunView, writeHtmlReport } = await import('../../quality-page/index.js');
  const s = result.summary;
  const view = buildRunView({
    source,
    completed: new Date().toISOString(),
    layout: { streams: result.streams, bitsPerStream: result.n },
    alpha: s.alpha,
    criteria: s.criteria,
    subTests: s.subTests,
    uniformity: s.uniformity,
    repetition: s.repetition,
  });
  try {
    await writeHtmlReport(file, view);
  } catch (err) {
    throw new CliError(`--html: cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

export function registerSts(program: Command): void {
  program
    .command('sts')
    .description("run the NIST SP 800-22 battery on a file (like NIST's assess; report or --json)")
    .argument('<file>', 'sequence file: raw binary (MSB first) or ASCII 0/1 characters')
    .option('--format <format>', 'binary or ascii (default: detected from the first 64 KiB)')
    .option('--bits <n>', 'bits per sequence (default 1000000, or less when the file is shorter)', positiveInteger('--bits'))
    .option('--streams <m>', 'number of sequences (default: as many as the file holds)', positiveInteger('--streams'))
    .option('--contiguous', "binary: read sequences back to back (default: each starts on a 32-bit word, as NIST's assess reads them)")
    .option('--tests <list>', `comma-separated tests (names or NIST numbers 1..15; default all)`)
    .option('--param <name=value>', `a test parameter, repeatable: ${PARAM_NAMES.join(', ')}`, collect, [])
    .option('--threads <t>', 'worker threads (default: every core)', positiveInteger('--threads', 1024))
    .option('--json', 'print JSON: {n, params, sequences: [{tests}], summary}')
    .option('--html <file>', 'also write the result as one self-contained HTML report')
    .option('--no-progress', 'no progress bar even on a terminal')
    .action(async (file: string, opts: StsCliOptions) => {
      await runStsCommand(file, opts);
    });
}
