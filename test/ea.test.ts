// `qentropy ea` and the SP 800-90B assessment from TypeScript, against NIST's own reference
// outputs in ../shared/vectors/sp800-90b (every value to 1e-6, NIST's self-test tolerance).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { assessBytes, assessFile, EaInputError, ESTIMATORS, toJson, type EaJson } from '../src/ea/index.js';
import { cli } from './helpers/cli.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const vectors = path.resolve(repoRoot, '..', 'shared', 'vectors', 'sp800-90b');

/** NIST's names in *.res -> our JSON keys. */
const NIST_NAMES: Record<string, string> = {
  'Most Common Value': 'most_common_value',
  Collision: 'collision',
  Markov: 'markov',
  Compression: 'compression',
  't-Tuple': 't_tuple',
  LRS: 'lrs',
  'MultiMCW Prediction': 'multi_mcw',
  'Lag Prediction': 'lag',
  'MultiMMC Prediction': 'multi_mmc',
  'LZ78Y Prediction': 'lz78y',
};

interface NistReference {
  literal: Record<string, number>;
  bitstring: Record<string, number>;
  values: Record<string, number>;
}

/** Reads a NIST -vv output: "<Literal|Bitstring> <name> Estimate: min entropy = x" and "key = x" / "key: x" lines. */
function readReference(file: string): NistReference {
  const ref: NistReference = { literal: {}, bitstring: {}, values: {} };
  for (const line of fs.readFileSync(path.join(vectors, file), 'utf8').split('\n')) {
    const est = /^(Literal|Bitstring) (.+) Estimate: min entropy = (\S+)$/.exec(line);
    if (est) {
      const track = est[1] === 'Literal' ? ref.literal : ref.bitstring;
      track[NIST_NAMES[est[2]!]!] = Number(est[3]);
      continue;
    }
    const kv = /^(.+?)(?: =|:) (-?[0-9.]+(?:e[-+]?[0-9]+)?)$/.exec(line);
    if (kv) ref.values[kv[1]!] = Number(kv[2]);
  }
  return ref;
}

function expectClose(got: number | null | undefined, want: number, what: string) {
  expect(got, what).toBeTypeOf('number');
  expect(Math.abs(got! - want), `${what}: ${got} vs NIST ${want}`).toBeLessThanOrEqual(1e-6);
}

/** Every estimator on both tracks, H_original, H_bitstring and the assessed value. */
function expectMatchesNonIid(json: EaJson, ref: NistReference) {
  const n = json.non_iid!;
  for (const [track, want, got] of [
    ['literal', ref.literal, n.literal],
    ['bitstring', ref.bitstring, n.bitstring],
  ] as const) {
    if (Object.keys(want).length === 0) {
      expect(got, track).toBeNull();
      continue;
    }
    for (const name of ESTIMATORS) {
      if (want[name] === undefined) expect(got![name], `${track} ${name}`).toBeNull();
      else expectClose(got![name], want[name]!, `${track} ${name}`);
    }
  }
  if (ref.values.H_bitstring !== undefined) expectClose(n.h_bitstring, ref.values.H_bitstring, 'H_bitstring');
  else expect(n.h_bitstring).toBeNull();
  expectClose(n.h_original, ref.values.H_original!, 'H_original');
  expectClose(n.h_assessed, ref.values['Assessed min entropy']!, 'assessed');
}

let tmp: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-ea-'));
});
afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('non-IID track against NIST', () => {
  // The C++ tests cover all 11 files; here the same numbers through the addon and the CLI.
  for (const name of ['rand1_short', 'rand4_short', 'rand8_short', 'truerand_4bit', 'biased-random-bits']) {
    it(`${name}: every estimator, H_original, H_bitstring and the assessed value`, async () => {
      const result = await assessFile(path.join(vectors, `${name}.bin`), { threads: 2 });
      expectMatchesNonIid(toJson(result), readReference(`${name}.non_iid.res`));
    });
  }

  it('qentropy ea --json prints the documented keys with NIST values', async () => {
    const { code, stdout, stderr } = await cli(['ea', path.join(vectors, 'rand8_short.bin'), '--json', '--threads', '2']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const json = JSON.parse(stdout) as EaJson;
    expect(Object.keys(json)).toEqual(['samples', 'bits_per_symbol', 'non_iid']);
    expect(json.samples).toBe(10000);
    expect(json.bits_per_symbol).toBe(8);
    expect(Object.keys(json.non_iid!)).toEqual(['literal', 'bitstring', 'h_original', 'h_bitstring', 'h_bitstring_per_symbol', 'h_assessed']);
    expectClose(json.non_iid!.h_bitstring_per_symbol, 8 * readReference('rand8_short.non_iid.res').values.H_bitstring!, 'H_bitstring per symbol');
    expect(Object.keys(json.non_iid!.literal!)).toEqual([...ESTIMATORS]);
    expect(Object.keys(json.non_iid!.bitstring!)).toEqual([...ESTIMATORS]);
    // Collision, Markov and compression are for binary data: null on 8-bit literal symbols.
    expect(json.non_iid!.literal!.collision).toBeNull();
    expectMatchesNonIid(json, readReference('rand8_short.non_iid.res'));
  });

  it('binary data has no bitstring track', async () => {
    const { code, stdout } = await cli(['ea', path.join(vectors, 'rand1_short.bin'), '--json']);
    expect(code).toBe(0);
    const json = JSON.parse(stdout) as EaJson;
    expect(json.non_iid!.bitstring).toBeNull();
    expect(json.non_iid!.h_bitstring).toBeNull();
    expectMatchesNonIid(json, readReference('rand1_short.non_iid.res'));
  });

  it('the text report lists each estimator and the assessed value', async () => {
    const { code, stdout } = await cli(['ea', path.join(vectors, 'rand4_short.bin'), '--threads', '1']);
    expect(code).toBe(0);
    const ref = readReference('rand4_short.non_iid.res');
    expect(stdout).toContain('MultiMMC prediction (6.3.9)');
    expect(stdout).toContain(`assessed min-entropy: ${ref.values['Assessed min entropy']!.toFixed(6)} bits per sample`);
    expect(stdout).toContain('warning: SP 800-90B asks for at least 1,000,000 samples');
  });

  it('--conditioned assesses the bitstring only; --truncate cuts it to 10^6 bits', async () => {
    const file = path.join(vectors, 'truerand_4bit.bin');
    const conditioned = toJson(await assessFile(file, { conditioned: true, threads: 2 }));
    expect(conditioned.non_iid!.literal).toBeNull();
    expect(conditioned.non_iid!.h_original).toBeNull();
    // h' is H_bitstring x 4 here; with all data its bitstring is the one NIST's reference assessed.
    expectClose(conditioned.non_iid!.h_bitstring, readReference('truerand_4bit.non_iid.res').values.H_bitstring!, "h'");
    const truncated = toJson(await assessFile(file, { truncate: true, threads: 2 }));
    // The literal track is unchanged (still NIST's); the bitstring holds the first 250,000 samples only.
    const ref = readReference('truerand_4bit.non_iid.res');
    for (const name of ESTIMATORS) {
      if (ref.literal[name] !== undefined) expectClose(truncated.non_iid!.literal![name], ref.literal[name]!, `literal ${name}`);
    }
    expect(truncated.non_iid!.bitstring!.most_common_value).not.toBe(conditioned.non_iid!.bitstring!.most_common_value);
    const first = fs.readFileSync(file).subarray(0, 250_000);
    const direct = toJson(await assessBytes(first, { bitsPerSymbol: 4, threads: 2 }));
    expect(truncated.non_iid!.bitstring).toEqual(direct.non_iid!.bitstring);
  });
});

describe('IID track against NIST', () => {
  it('deterministic values of ea_iid on rand8_short, through the CLI', async () => {
    const { code, stdout } = await cli(['ea', path.join(vectors, 'rand8_short.bin'), '--iid', '--json']);
    expect(code).toBe(0);
    const json = JSON.parse(stdout) as EaJson;
    expect(json.non_iid).toBeUndefined();
    const ref = readReference('rand8_short.iid.res');
    const iid = json.iid!;
    expectClose(iid.most_common_value.literal, ref.literal.most_common_value!, 'literal MCV');
    expectClose(iid.most_common_value.bitstring, ref.bitstring.most_common_value!, 'bitstring MCV');
    expectClose(iid.h_assessed, ref.values['Assessed min entropy']!, 'assessed');
    expectClose(iid.chi_square.independence.statistic, ref.values['Chi square independence: T']!, 'independence T');
    expect(iid.chi_square.independence.df).toBe(ref.values['Chi square independence: df']);
    expectClose(iid.chi_square.independence.p_value, ref.values['Chi square independence: P-value']!, 'independence P');
    expectClose(iid.chi_square.goodness_of_fit.statistic, ref.values['Chi square goodness of fit: T']!, 'goodness T');
    expect(iid.chi_square.goodness_of_fit.df).toBe(ref.values['Chi square goodness of fit: df']);
    expectClose(iid.chi_square.goodness_of_fit.p_value, ref.values['Chi square goodness of fit: P-value']!, 'goodness P');
    expect(iid.chi_square.passed).toBe(false); // NIST: "Chi square tests: Failed" on this file
    expectClose(iid.lrs.p_col, ref.values['Literal Longest Repeated Substring results: P_col']!, 'P_col');
    expect(iid.lrs.w).toBe(ref.values['Literal Longest Repeated Substring results: W']);
    for (const [name, s] of Object.entries(iid.permutation.statistics)) {
      expectClose(s.value, ref.values[`Permutation testing: Unpermuted result ${name}`]!, name);
    }
    expect(Object.keys(iid.permutation.statistics)).toHaveLength(19);
    // The failed chi-square test settles NIST's verdict, "not IID", and ends the shuffling.
    // It runs on the second thread beside the shuffles, so on this short file the shuffles
    // may settle every statistic first: the permutation test is then passed (NIST's result),
    // else left undecided, never failed. With --full-permutation-test it runs to the end.
    expect(iid.passed).toBe(false);
    expect([null, true]).toContain(iid.permutation.passed);
    const full = await cli(['ea', path.join(vectors, 'rand8_short.bin'), '--iid', '--json', '--full-permutation-test']);
    expect(full.code).toBe(0);
    const fullIid = (JSON.parse(full.stdout) as EaJson).iid!;
    expect(fullIid.permutation.passed).toBe(true); // NIST: passed; IID data settles every statistic
    expect(fullIid.permutation.shuffles).toBeLessThan(10000);
    for (const s of Object.values(fullIid.permutation.statistics)) expect(s.outcome).toBe('passed');
    expect(fullIid.passed).toBe(false);
  });

  it('decides "not IID" on a random walk without running the 10,000 shuffles', async () => {
    // 10^5 8-bit samples, each within 3 of the one before (mod 256): the raw output of a
    // slow noise source. NIST's ea_iid runs all 10,000 shuffles on such data, each with a
    // bzip2 compression; the failed chi-square test already settles the verdict.
    const walk = new Uint8Array(100_000);
    let x = 0;
    let state = 7;
    for (let i = 0; i < walk.length; i++) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      x = (x + ((state >>> 16) % 7) + 253) & 0xff;
      walk[i] = x;
    }
    const file = path.join(tmp, 'walk.bin');
    fs.writeFileSync(file, walk);
    const { code, stdout } = await cli(['ea', file, '--iid', '--json', '--threads', '1']);
    expect(code).toBe(0);
    const iid = (JSON.parse(stdout) as EaJson).iid!;
    expect(iid.chi_square.passed).toBe(false);
    expect(iid.passed).toBe(false);
    expect(iid.permutation.shuffles).toBe(0); // one thread: the chi-square test runs first
    expect(iid.permutation.passed).toBeNull();
    for (const s of Object.values(iid.permutation.statistics)) expect(s).toMatchObject({ counts: [0, 0, 0], outcome: 'open' });
    const text = await cli(['ea', file, '--iid', '--threads', '1']);
    expect(text.stdout).toContain('permutation tests: not decided');
    expect(text.stdout).toContain('IID assumption: REJECTED');
  });
});

describe('restart tests', () => {
  it('--restart validates H_I on independent restarts', async () => {
    const { code, stdout } = await cli(['ea', path.join(vectors, 'truerand_8bit.bin'), '--restart', '7', '--iid', '--json']);
    expect(code).toBe(0);
    const r = (JSON.parse(stdout) as EaJson).restart!;
    expect(r.sanity_passed).toBe(true);
    expect(r.validated).toBe(true);
    expect(r.h_min).toBe(7);
  });
});

describe('bad input: one line, exit 2', () => {
  async function expectRejected(args: string[], message: RegExp) {
    const { code, stdout, stderr } = await cli(['ea', ...args]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(message);
  }

  it('an empty file', async () => {
    const file = path.join(tmp, 'empty.bin');
    fs.writeFileSync(file, '');
    await expectRejected([file], /empty\.bin is empty/);
  });

  it('a missing file', async () => {
    await expectRejected([path.join(tmp, 'nope.bin')], /cannot read .*no such file/);
  });

  it('K outside 1..8', async () => {
    await expectRejected([path.join(vectors, 'rand1_short.bin'), '--bits-per-symbol', '9'], /--bits-per-symbol must be an integer from 1 to 8/);
    await expectRejected([path.join(vectors, 'rand1_short.bin'), '--bits-per-symbol', '0'], /from 1 to 8/);
  });

  it('symbols wider than K bits', async () => {
    await expectRejected([path.join(vectors, 'rand8_short.bin'), '--bits-per-symbol', '4'], /8 bits wide, wider than the 4 bits per symbol/);
  });

  it('too few samples, naming the estimator', async () => {
    const file = path.join(tmp, 'short.bin');
    fs.writeFileSync(file, fs.readFileSync(path.join(vectors, 'rand8_short.bin')).subarray(0, 1000));
    await expectRejected([file], /1000 samples are too few for the MultiMCW estimate/);
    const bits = path.join(tmp, 'bits.bin');
    fs.writeFileSync(bits, fs.readFileSync(path.join(vectors, 'rand1_short.bin')).subarray(0, 5000));
    await expectRejected([bits], /5000 bits are too few for the compression estimate/);
  });

  it('a single repeated symbol', async () => {
    const file = path.join(tmp, 'constant.bin');
    fs.writeFileSync(file, Buffer.alloc(5000, 7));
    await expectRejected([file], /same symbol/);
  });

  it('conflicting tracks and a bad --restart', async () => {
    await expectRejected([path.join(vectors, 'rand1_short.bin'), '--iid', '--both'], /one of --iid, --non-iid and --both/);
    await expectRejected([path.join(vectors, 'rand8_short.bin'), '--restart', 'x'], /--restart takes/);
    await expectRejected([path.join(vectors, 'rand8_short.bin'), '--restart', '7'], /exactly 1000 x 1000/);
  });

  it('the library rejects with EaInputError', async () => {
    await expect(assessBytes(new Uint8Array(0))).rejects.toBeInstanceOf(EaInputError);
  });

  // The real limit is 2 GiB - 1 (what fs.readFile reads from a regular file); these tests
  // lower it so they need not read 2 GiB.
  async function withInputLimit<T>(bytes: number, run: () => Promise<T>): Promise<T> {
    process.env.QENTROPY_EA_MAX_INPUT_BYTES = String(bytes);
    try {
      return await run();
    } finally {
      delete process.env.QENTROPY_EA_MAX_INPUT_BYTES;
    }
  }

  it('an endless device (/dev/zero) is read only up to the limit', async () => {
    await withInputLimit(1 << 20, () => expectRejected(['/dev/zero'], /^qentropy: \/dev\/zero: more than 1048576 bytes, the most one assessment reads$/m));
    await expect(assessFile('/dev/zero', { maxInputBytes: 65_536 })).rejects.toThrow(/more than 65536 bytes/);
  });

  it('a regular file over the limit, and a bad limit', async () => {
    const file = path.join(vectors, 'rand8_short.bin'); // 10,000 bytes
    await withInputLimit(9_999, () => expectRejected([file], /rand8_short\.bin: more than 9999 bytes/));
    await withInputLimit(0, () => expectRejected([file], /QENTROPY_EA_MAX_INPUT_BYTES must be an integer from 1 to 2147483647, not '0'/));
    await expect(assessFile(file, { maxInputBytes: 2 ** 31 })).rejects.toThrow(/input limit must be an integer/);
  });

  it('a FIFO is read to its end, like the same bytes in a file', async () => {
    const file = path.join(vectors, 'rand8_short.bin');
    const fifo = path.join(tmp, 'samples.fifo');
    execFileSync('mkfifo', ['-m', '600', fifo]);
    const writer = new Promise<void>((resolve, reject) => {
      const out = fs.createWriteStream(fifo);
      out.on('error', reject).on('finish', resolve);
      out.end(fs.readFileSync(file));
    });
    const opts = { track: 'iid' as const, shuffles: 20 };
    // Exactly at the limit is allowed.
    const [fromFifo] = await Promise.all([assessFile(fifo, { ...opts, maxInputBytes: 10_000 }), writer]);
    // The shuffles are random: compare everything but their counts.
    const deterministic = (r: object) => JSON.stringify(r, (key, value: unknown) => (key === 'counts' ? undefined : value));
    expect(deterministic(fromFifo)).toBe(deterministic(await assessFile(file, opts)));
    expect(fromFifo.samples).toBe(10_000);
  });
});

describe('off the event loop', () => {
  it('the event loop turns during an assessment of 10^6 samples, and progress reaches the end', async () => {
    // A callback queued after the call starts runs before the assessment is done; one that
    // ran on the event loop would settle first (its promise callback is a microtask).
    let loopTurned = false;
    const seen: number[] = [];
    const run = assessFile(path.join(vectors, 'truerand_4bit.bin'), { threads: 2, onProgress: (done, total) => seen.push(done / total) }).then(
      () => loopTurned,
    );
    setImmediate(() => {
      loopTurned = true;
    });
    expect(await run).toBe(true);
    // Real progress from the worker threads, in order, ending at 100%.
    expect(seen.some((f) => f > 0 && f < 1)).toBe(true);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(seen.at(-1)).toBe(1);
  });
});
