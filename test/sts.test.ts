// The NIST STS battery from TypeScript: NIST's own P-values for data.e (ASCII) and
// data.sha1 (binary), the `qentropy sts` command, threads, cancellation, chunked files,
// and a multi-stream run on the OS generator.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  aperiodicTemplates,
  inspectSequenceFile,
  runBattery,
  runBatteryOnFile,
  runTest,
  StsAbortError,
  TEST_NAMES,
  type BatteryResult,
} from '../src/sts/index.js';
import { cli } from './helpers/cli.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const vectors = path.resolve(repoRoot, '..', 'shared', 'vectors');
const dataE = path.join(vectors, 'data.e');
const dataSha1 = path.join(vectors, 'data.sha1');

interface Reference {
  n: number;
  params: Record<string, number>;
  tests: Record<string, (number | null)[]>;
}
const refE = JSON.parse(fs.readFileSync(path.join(vectors, 'reference-pvalues-e.json'), 'utf8')) as Reference;
const refSha1 = JSON.parse(fs.readFileSync(path.join(vectors, 'reference-pvalues-sha1.json'), 'utf8')) as Reference;

/** The first `n` bits of an ASCII 0/1 file, packed MSB first (written here, independently of src/sts/file.ts). */
function packAscii(text: string, n: number): Buffer {
  const out = Buffer.alloc(Math.ceil(n / 8));
  let bit = 0;
  for (let i = 0; i < text.length && bit < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x31) out[bit >> 3]! |= 0x80 >> (bit & 7);
    if (c === 0x30 || c === 0x31) bit++;
  }
  if (bit < n) throw new Error('short vector file');
  return out;
}

/** Every sub-test P-value against NIST's: within 1e-6, null exactly where NIST has none. */
function expectMatchesReference(tests: Record<string, (number | null)[] | undefined>, ref: Reference) {
  for (const name of TEST_NAMES) {
    const want = ref.tests[name]!;
    const got = tests[name];
    expect(got, name).toBeDefined();
    expect(got!.length, name).toBe(want.length);
    want.forEach((w, i) => {
      if (w === null) expect(got![i], `${name}[${i}]`).toBeNull();
      else expect(Math.abs(got![i]! - w), `${name}[${i}]: ${got![i]} vs ${w}`).toBeLessThanOrEqual(1e-6 + 1e-12);
    });
  }
}

let tmp: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-sts-'));
});
afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('NIST reference P-values', () => {
  it('data.e (first 10^6 bits, one sequence) gives every P-value of sts-2.1.2', async () => {
    const bits = packAscii(fs.readFileSync(dataE, 'latin1'), 1_000_000);
    const r = await runBattery(bits, { bitCount: 1_000_000 });
    expect(r.n).toBe(1_000_000);
    expect(r.streams).toBe(1);
    expect(r.sequences).toHaveLength(1);
    expectMatchesReference(r.sequences[0]!.tests, refE);
  });

  it('data.sha1 read as raw binary gives every P-value, null where not applicable', async () => {
    const bytes = fs.readFileSync(dataSha1);
    const r = await runBattery(bytes, { threads: 2 });
    expectMatchesReference(r.sequences[0]!.tests, refSha1);
    // J = 412 < 500 cycles: NIST's note, and no P-value counted for the excursion tests.
    expect(r.sequences[0]!.notes?.random_excursions).toBeTruthy();
    const excursions = r.summary.subTests.filter((s) => s.test === 'random_excursions');
    expect(excursions.every((s) => s.sampleSize === 0)).toBe(true);
  });

  it('runTest and aperiodicTemplates for single small jobs', () => {
    // SP 800-22 §2.1.8: the frequency test on these 100 bits (of pi) gives P = 0.109599.
    const example = '1100100100001111110110101010001000100001011010001100001000110100110001001100011001100010100010111000';
    const bits = packAscii(example, 100);
    expect(runTest('frequency', bits, { bitCount: 100 }).pValues[0]).toBeCloseTo(0.109599, 6);
    const t9 = aperiodicTemplates(9);
    expect(t9).toHaveLength(148);
    const file = fs.readFileSync(path.join(vectors, 'template9'), 'utf8').trim().split('\n');
    expect(t9.map((t) => t.toString(2).padStart(9, '0'))).toEqual(file.map((l) => l.replace(/\s+/g, '')));
    expect(() => runTest('nope' as 'frequency', bits)).toThrow(/unknown test/);
  });
});

describe('qentropy sts', () => {
  it('--format ascii --json on data.e matches the reference', async () => {
    const { code, stdout, stderr } = await cli(['sts', dataE, '--format', 'ascii', '--json', '--threads', '2']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const json = JSON.parse(stdout) as { n: number; params: Record<string, number>; sequences: { tests: Record<string, (number | null)[]> }[]; summary?: unknown };
    expect(json.n).toBe(1_000_000);
    expect(json.params).toEqual(refE.params);
    expect(json.sequences).toHaveLength(1);
    expect(json.summary).toBeUndefined(); // M = 1
    expectMatchesReference(json.sequences[0]!.tests, refE);
  });

  it('prints a report shaped like finalAnalysisReport.txt', async () => {
    const { code, stdout } = await cli(['sts', dataSha1, '--format', 'binary']);
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    expect(lines[1]).toBe('RESULTS FOR THE UNIFORMITY OF P-VALUES AND THE PROPORTION OF PASSING SEQUENCES');
    expect(lines[5]).toBe(' C1  C2  C3  C4  C5  C6  C7  C8  C9 C10  P-VALUE  PROPORTION  STATISTICAL TEST');
    const table = lines.slice(7, 7 + 188);
    for (const line of table) expect(line).toMatch(/^( {1,2}\d ){10}( {4}----| \d\.\d{6} [ *]) {4}( ------ {5}|\s*\d+\/\d+ +[ *]  )[A-Za-z]+$/);
    expect(table.filter((l) => l.endsWith('NonOverlappingTemplate'))).toHaveLength(148);
    // Frequency P = 0.604458 lands in C7; the excursion tests are not applicable (J = 412).
    expect(table[0]).toBe('  0   0   0   0   0   0   1   0   0   0     ----       1/1       Frequency');
    expect(table.filter((l) => l.includes(' ------     RandomExcursions'))).toHaveLength(26);
    expect(stdout).toContain('The minimum pass rate for the random excursion (variant) test is undefined.');
    expect(stdout).toContain('tests_passed:');
  });

  it("on one sequence (NIST's data.e) says uniformity was not judged instead of 'loosely failing: yes' (issue 27)", async () => {
    const { code, stdout } = await cli(['sts', dataE, '--format', 'ascii', '--bits', '1000000']);
    expect(code).toBe(0);
    expect(stdout).toContain('tests_passed:          true   (strictly failing: no, loosely failing: not judged (uniformity needs at least 55 sequences))');
    expect(stdout).not.toContain('loosely failing: yes');
  });

  it('--html names the file it wrote, on stderr, and keeps stdout for the report (issue 27)', async () => {
    const file = path.join(tmp, 'report.html');
    const { code, stdout, stderr } = await cli(['sts', dataE, '--format', 'ascii', '--tests', 'frequency', '--json', '--html', file]);
    expect(code).toBe(0);
    expect(stderr).toBe(`qentropy: wrote the HTML report to ${file}\n`);
    expect(fs.readFileSync(file, 'utf8')).toMatch(/^<!doctype html>/i);
    expect(() => JSON.parse(stdout) as unknown).not.toThrow();
  });

  it('reads a multi-stream binary file in chunks with the same result as one buffer', async () => {
    const data = crypto.randomBytes(40 * 1250);
    const file = path.join(tmp, 'chunks.bin');
    fs.writeFileSync(file, data);
    const opts = { tests: ['frequency', 'runs', 'serial'] as const, params: { serial_m: 5 } };
    const whole = await runBattery(data, { ...opts, streams: 40 });
    // 10,000 bits is not a multiple of 32: contiguous reading, so the sequences are the buffer's.
    const chunked = await runBatteryOnFile(file, { ...opts, format: 'binary', bits: 10_000, chunkBits: 80_000, contiguous: true });
    expect(chunked.streams).toBe(40);
    expect(chunked.sequences).toEqual(whole.sequences);
    expect(chunked.summary).toEqual(whole.summary);
  });

  describe('binary sequences whose length is not a multiple of 32 bits', () => {
    // NIST's assess reads binary files 4 bytes at a time (readHexDigitsInBinaryFormat), so
    // each sequence starts on a 32-bit word and the rest of its last word is skipped. The
    // expected P-values below come from NIST's sts-2.1.2 assess (gcc 12, built unchanged)
    // run on strideFile()'s bytes: `assess 100008` / `assess 20003`, input file, tests
    // 111100000000000 (frequency, block frequency, cumulative sums, runs), default
    // parameters, 3 / 10 bitstreams, input mode 1 (binary); results.txt of each test.
    const nist: Record<number, { streams: number; tests: Record<string, number[]> }> = {
      100008: {
        streams: 3,
        tests: {
          frequency: [0.254964, 0.644315, 0.414595],
          block_frequency: [0.887367, 0.655258, 0.281488],
          cumulative_sums: [0.30219, 0.443981, 0.811909, 0.969292, 0.493228, 0.105923],
          runs: [0.139494, 0.15494, 0.123824],
        },
      },
      20003: {
        streams: 10,
        tests: {
          frequency: [0.045396, 0.8486, 0.938006, 0.586145, 0.793622, 0.538464, 0.339819, 0.172374, 0.707855, 0.645814],
          block_frequency: [0.444355, 0.605724, 0.879341, 0.363586, 0.414131, 0.660497, 0.391225, 0.928758, 0.002986, 0.232036],
          // forward, reverse of each sequence in turn (assess writes them in this order)
          cumulative_sums: [
            0.064327, 0.057808, 0.875637, 0.704373, 0.967565, 0.964585, 0.458112, 0.645021, 0.730945, 0.939497, 0.193194,
            0.58733, 0.574833, 0.327244, 0.204812, 0.344664, 0.226474, 0.452705, 0.815676, 0.581065,
          ],
          runs: [0.205546, 0.042407, 0.859728, 0.850241, 0.576122, 0.442471, 0.776822, 0.415552, 0.577129, 0.520917],
        },
      },
    };
    const tests = ['frequency', 'block_frequency', 'cumulative_sums', 'runs'] as const;

    /** 37,512 deterministic bytes: SHA-256 of 'qentropy sts stride ' + a 32-bit big-endian counter, concatenated. */
    function strideFile(): string {
      const out = Buffer.alloc(37_512);
      for (let i = 0; i * 32 < out.length; i++) {
        const counter = Buffer.alloc(4);
        counter.writeUInt32BE(i);
        crypto.createHash('sha256').update('qentropy sts stride ').update(counter).digest().copy(out, i * 32);
      }
      const file = path.join(tmp, 'stride.bin');
      fs.writeFileSync(file, out);
      return file;
    }

    function flatten(result: BatteryResult, test: string): number[] {
      return result.sequences.flatMap((s) => s.tests[test as keyof typeof s.tests] as number[]);
    }

    for (const bits of [100008, 20003]) {
      it(`gives NIST assess's P-values for ${nist[bits]!.streams} sequences of ${bits} bits, in one chunk and in several`, async () => {
        const file = strideFile();
        const { streams } = nist[bits]!;
        for (const chunkBits of [undefined, 8 * bits]) {
          const result = await runBatteryOnFile(file, { format: 'binary', bits, streams, tests, ...(chunkBits ? { chunkBits } : {}) });
          for (const test of tests) {
            const ours = flatten(result, test);
            expect(ours.length, test).toBe(nist[bits]!.tests[test]!.length);
            ours.forEach((p, i) => expect(Math.abs(p - nist[bits]!.tests[test]![i]!), `${test} #${i}`).toBeLessThanOrEqual(5e-7));
          }
        }
      });
    }

    it('reads them back to back with --contiguous, and says how many bits word-aligned sequences need', async () => {
      const file = strideFile();
      const data = fs.readFileSync(file);
      const contiguous = await runBatteryOnFile(file, { format: 'binary', bits: 20003, streams: 10, tests, contiguous: true });
      const buffer = await runBattery(data.subarray(0, Math.ceil((10 * 20003) / 8)), { streams: 10, bitsPerStream: 20003, tests: [...tests] });
      expect(contiguous.sequences).toEqual(buffer.sequences);
      // 37,512 bytes hold 15 sequences of 20,003 bits back to back, 14 word-aligned ones.
      expect((await runBatteryOnFile(file, { format: 'binary', bits: 20003, tests: ['frequency'] })).streams).toBe(14);
      expect((await runBatteryOnFile(file, { format: 'binary', bits: 20003, tests: ['frequency'], contiguous: true })).streams).toBe(15);
      const { code, stderr } = await cli(['sts', file, '--format', 'binary', '--bits', '20003', '--streams', '15', '--tests', 'frequency']);
      expect(code).toBe(2);
      expect(stderr.trim()).toMatch(/holds 300096 bits; 15 sequence\(s\) of 20003 bits need 300451$/);
      const ok = await cli(['sts', file, '--format', 'binary', '--bits', '20003', '--streams', '15', '--tests', 'frequency', '--contiguous', '--json']);
      expect(ok.code).toBe(0);
    });

    it('without --bits, picks the longest length of which the file holds M word-aligned sequences', async () => {
      const file = path.join(tmp, 'eight-thousand-bits.bin');
      fs.writeFileSync(file, crypto.randomBytes(1000));
      // 2,666 bits (8,000 / 3) would need 2 x 2,688 + 2,666 = 8,042; 2,656 = 83 words fits exactly 7,968.
      expect(await inspectSequenceFile(file, { format: 'binary', streams: 3 })).toEqual({
        format: 'binary',
        totalBits: 8000,
        bits: 2656,
        streams: 3,
        strideBits: 2656,
      });
      expect((await inspectSequenceFile(file, { format: 'binary', streams: 3, contiguous: true })).bits).toBe(2666);
    });
  });

  it('reads ASCII with any whitespace, in chunks, like the packed bytes', async () => {
    const data = crypto.randomBytes(24 * 125);
    let text = '';
    for (let i = 0; i < data.length; i++) text += `${data[i]!.toString(2).padStart(8, '0')}${i % 7 === 0 ? '\r\n' : i % 3 ? '' : ' '}`;
    const file = path.join(tmp, 'bits.txt');
    fs.writeFileSync(file, text);
    const whole = await runBattery(data, { streams: 24, tests: ['frequency', 'cumulative_sums'] });
    const chunked = await runBatteryOnFile(file, { bits: 1000, tests: ['frequency', 'cumulative_sums'], chunkBits: 8000 });
    expect(chunked.format).toBe('ascii'); // detected
    expect(chunked.sequences).toEqual(whole.sequences);
  });

  it('rejects bad input with one line and a non-zero exit', async () => {
    const badAscii = path.join(tmp, 'bad.txt');
    fs.writeFileSync(badAscii, '0101\n01x1\n');
    const cases: [string[], RegExp][] = [
      [['sts', path.join(tmp, 'missing.bin')], /no such file/],
      [['sts', dataSha1, '--bits', '1000000', '--streams', '2'], /holds 1000000 bits; 2 sequence\(s\) of 1000000 bits need 2000000/],
      [['sts', badAscii, '--format', 'ascii'], /'x' \(0x78\) at offset 7 is not 0, 1 or whitespace/],
      [['sts', dataSha1, '--streams', '0'], /--streams must be an integer/],
      [['sts', dataSha1, '--tests', 'frequency,monobit'], /unknown test 'monobit'/],
      [['sts', dataSha1, '--param', 'serial_k=3'], /unknown parameter 'serial_k'/],
      [['sts', dataSha1, '--param', 'serial_m'], /--param takes name=value/],
      [['sts', dataSha1, '--format', 'hex'], /--format must be binary or ascii/],
      // Files are streamed in chunks of whole sequences; an endless device is refused, not read.
      [['sts', '/dev/zero'], /\/dev\/zero: not a regular file/],
      [['sts', dataSha1, '--param', 'non_overlapping_template_m=30'], /2\.\.21/],
    ];
    for (const [args, message] of cases) {
      const { code, stdout, stderr } = await cli(args);
      expect(code, args.join(' ')).not.toBe(0);
      expect(stdout, args.join(' ')).toBe('');
      expect(stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
      expect(stderr, args.join(' ')).toMatch(message);
    }
  });

  it('--tests and --param select what runs', async () => {
    const { code, stdout } = await cli(['sts', dataE, '--json', '--tests', 'frequency,14', '--param', 'serial_m=2', '--threads', '1']);
    expect(code).toBe(0);
    const json = JSON.parse(stdout) as { params: { serial_m: number }; sequences: { tests: Record<string, unknown[]> }[] };
    expect(Object.keys(json.sequences[0]!.tests)).toEqual(['frequency', 'serial']);
    expect(json.params.serial_m).toBe(2);
  });
});

describe('runBattery', () => {
  let random: Buffer;
  beforeAll(() => {
    random = crypto.randomBytes((20 * 1_000_000) / 8);
  });

  it('gives identical results with 1 and 2 threads', async () => {
    const data = random.subarray(0, (6 * 300_000) / 8);
    const one = await runBattery(data, { streams: 6, threads: 1 });
    const two = await runBattery(data, { streams: 6, threads: 2 });
    expect(two.sequences).toEqual(one.sequences);
    expect(two.summary).toEqual(one.summary);
  });

  it('stops when its AbortSignal fires and reports progress', async () => {
    const controller = new AbortController();
    const seen: number[] = [];
    const run = runBattery(random, {
      streams: 20,
      threads: 1,
      signal: controller.signal,
      onProgress: ({ completed, total }) => {
        expect(total).toBe(20);
        seen.push(completed);
        controller.abort();
      },
    });
    await expect(run).rejects.toBeInstanceOf(StsAbortError);
    expect(seen.length).toBeGreaterThan(0);
    expect(Math.max(...seen)).toBeLessThan(20);
    const aborted = AbortSignal.abort();
    await expect(runBattery(random, { streams: 20, signal: aborted })).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
  });

  it('does not block the event loop', async () => {
    // A callback queued after the call starts runs before the battery's 20 streams (about
    // 0.1 s of work) are done; a battery that ran on the event loop would settle first.
    let loopTurned = false;
    const run = runBattery(random, { streams: 20, threads: 1 }).then(() => loopTurned);
    setImmediate(() => {
      loopTurned = true;
    });
    expect(await run).toBe(true);
  });

  // The OS generator passes: 100 sequences of 10^6 bits, NIST's recommended batch, so
  // both criteria are judged; tests_passed needs either, and a good generator failing
  // both at once is far rarer than one in a million.
  it('passes on 100 x 10^6 bits from the OS generator', async () => {
    const batch = crypto.randomBytes((100 * 1_000_000) / 8);
    const r: BatteryResult = await runBattery(batch, { streams: 100, threads: 2 });
    expect(r.sequences).toHaveLength(100);
    expect(r.summary.criteria.tests_passed).toBe(true);
    expect(r.summary.repetition.flagged).toBe(false);
  });

  it('flags a batch of identical sequences', async () => {
    const one = random.subarray(0, 125_000);
    const batch = Buffer.concat(Array.from({ length: 4 }, () => one));
    const r = await runBattery(batch, { streams: 4, tests: ['frequency'] });
    expect(r.summary.repetition.identical).toEqual([
      [0, 1],
      [0, 2],
      [0, 3],
    ]);
    expect(r.summary.repetition.periodBits).toBe(1_000_000);
  });

  it('rejects streams that do not fit and unknown names', async () => {
    await expect(runBattery(random, { streams: 21, bitsPerStream: 1_000_000 })).rejects.toThrow(/need 21000000 bits/);
    await expect(runBattery(random, { tests: ['nope' as 'frequency'] })).rejects.toThrow(/unknown test/);
    await expect(runBattery(random, { params: { serial: 3 } as never })).rejects.toThrow(/unknown parameter/);
  });
});

describe('qentropy sts as a process whose reader stops early', () => {
  it('`sts … --json | head` ends quietly with the SIGPIPE status, no stack trace', async () => {
    const { spawn } = await import('node:child_process');
    const { createTestPackage } = await import('./helpers/package.js');
    const pkg = createTestPackage('sts-epipe');
    try {
      // 100 sequences of 10^5 bits: about 430 KB of JSON, more than a pipe holds.
      const file = path.join(pkg.dir, 'random.bin');
      fs.writeFileSync(file, crypto.randomBytes(1_250_000));
      const child = spawn(process.execPath, [pkg.cli, 'sts', file, '--format', 'binary', '--bits', '100000', '--streams', '100', '--json'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      // What `head -c 100` does: read the first bytes, then close the pipe.
      child.stdout.once('data', () => child.stdout.destroy());
      const code = await new Promise<number | null>((resolve) => child.on('close', (status) => resolve(status)));
      expect(stderr).not.toMatch(/EPIPE|Unhandled|at .*\(/);
      expect(code).toBe(141);
    } finally {
      pkg.remove();
    }
  });
});
