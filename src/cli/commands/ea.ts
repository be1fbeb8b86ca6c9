// `qentropy ea FILE`: SP 800-90B entropy assessment of a file of samples, one per byte, like
// NIST's ea_non_iid / ea_iid / ea_restart but fast (docs/ea.md).
//   qentropy ea FILE [--bits-per-symbol K] [--iid | --non-iid | --both] [--conditioned]
//                [--truncate] [--full-permutation-test] [--restart H_I] [--threads N] [--json]
// A progress bar on stderr when it is a terminal. Exit 0 when the assessment completes (the
// numbers are in the output), 2 for bad input.
import os from 'node:os';

import type { Command } from 'commander';

import { assessFile, EaInputError, formatText, toJson, type Track } from '../../ea/index.js';
import { MAX_INPUT_BYTES } from '../../ea/read-input.js';
import { CliError } from '../errors.js';
import { progressBar } from '../progress.js';

interface EaCliOptions {
  bitsPerSymbol?: string;
  iid?: boolean;
  nonIid?: boolean;
  both?: boolean;
  conditioned?: boolean;
  truncate?: boolean;
  fullPermutationTest?: boolean;
  restart?: string;
  threads?: string;
  json?: boolean;
  progress?: boolean;
}

function integerOption(flag: string, value: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new CliError(`${flag} must be an integer from ${min} to ${max}, not '${value}'`, 2);
  }
  return Number(value);
}

function trackOf(opts: EaCliOptions): Track {
  const chosen = [opts.iid && 'iid', opts.nonIid && 'non-iid', opts.both && 'both'].filter(Boolean) as Track[];
  if (chosen.length > 1) throw new CliError('choose one of --iid, --non-iid and --both', 2);
  return chosen[0] ?? 'non-iid';
}

/** QENTROPY_EA_MAX_INPUT_BYTES lowers the 2 GiB input limit (docs/ea.md). */
function maxInputBytesFromEnv(): number | undefined {
  const raw = process.env.QENTROPY_EA_MAX_INPUT_BYTES;
  if (raw === undefined || raw === '') return undefined;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_INPUT_BYTES) {
    throw new CliError(`QENTROPY_EA_MAX_INPUT_BYTES must be an integer from 1 to ${MAX_INPUT_BYTES}, not '${raw}'`, 2);
  }
  return Number(raw);
}

async function runEaCommand(file: string, opts: EaCliOptions): Promise<void> {
  const bitsPerSymbol = opts.bitsPerSymbol === undefined ? undefined : integerOption('--bits-per-symbol', opts.bitsPerSymbol, 1, 8);
  const threads = opts.threads === undefined ? os.availableParallelism() : integerOption('--threads', opts.threads, 1, 1024);
  const track = trackOf(opts);
  let restartEntropy: number | undefined;
  if (opts.restart !== undefined) {
    restartEntropy = Number(opts.restart);
    if (!/^[0-9.]+$/.test(opts.restart) || !(restartEntropy > 0) || restartEntropy > 8) {
      throw new CliError(`--restart takes the initial estimate H_I, a number above 0 and at most 8, not '${opts.restart}'`, 2);
    }
    if (track === 'both') throw new CliError('--restart assesses one track: use --iid or --non-iid with it', 2);
  }
  const maxInputBytes = maxInputBytesFromEnv();
  const bar = opts.progress !== false && process.stderr.isTTY === true ? progressBar(process.stderr, 'ea') : undefined;
  try {
    const result = await assessFile(file, {
      ...(maxInputBytes !== undefined ? { maxInputBytes } : {}),
      ...(bitsPerSymbol !== undefined ? { bitsPerSymbol } : {}),
      track,
      conditioned: opts.conditioned ?? false,
      truncate: opts.truncate ?? false,
      fullPermutationTest: opts.fullPermutationTest ?? false,
      threads,
      ...(restartEntropy !== undefined ? { restartEntropy } : {}),
      ...(bar ? { onProgress: (done: number, total: number) => bar.update(done, total, `${Math.round((100 * done) / total)}%`) } : {}),
    });
    bar?.done();
    const json = toJson(result, restartEntropy);
    process.stdout.write(opts.json ? `${JSON.stringify(json)}\n` : formatText(json, file));
  } catch (err) {
    bar?.done();
    if (err instanceof EaInputError) throw new CliError(err.message, 2);
    throw err;
  }
}

export function registerEa(program: Command): void {
  program
    .command('ea')
    .description("SP 800-90B entropy assessment of a file of samples (like NIST's ea_non_iid/ea_iid; report or --json)")
    .argument('<file>', 'samples, one per byte (the low K bits of each byte)')
    .option('--bits-per-symbol <k>', 'bits per sample, 1..8 (default: the width of the widest sample)')
    .option('--non-iid', 'the non-IID track, SP 800-90B 6.3 (the default)')
    .option('--iid', 'the IID track, SP 800-90B 5 (permutation, chi-square and LRS tests)')
    .option('--both', 'both tracks')
    .option('--conditioned', "conditioned output (3.1.5.2): assess the bitstring only (NIST's -c)")
    .option('--truncate', "cut the bitstring to 10^6 bits (NIST's -t)")
    .option(
      '--full-permutation-test',
      "run the IID permutation test to its own verdict even after the chi-square or LRS test rejected IID (as NIST's ea_iid does)",
    )
    .option('--restart <h>', 'restart tests (3.1.4): FILE is 1000 restarts x 1000 samples, checked against H_I = h')
    .option('--threads <n>', 'worker threads (default: every core)')
    .option('--json', 'print JSON (docs/ea.md lists the keys)')
    .option('--no-progress', 'no progress bar even on a terminal')
    .action(async (file: string, opts: EaCliOptions) => {
      await runEaCommand(file, opts);
    });
}
