// Native health tests through the TypeScript wrappers: SP 800-90B RCT/APT verdicts on
// stuck, repeating and good data, and the FIPS 140-2 block tests on NIST's SHA-1 data.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import { FIPS140_BLOCK_BYTES, Fips140Tester, HealthTester, healthCutoffs } from '../src/native/health.js';
import { PatternTester } from '../src/native/pattern.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const vectors = path.resolve(repoRoot, '..', 'shared', 'vectors');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'qe-health-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A deterministic, well-mixed stream: SHA-256 in counter mode. */
function goodBytes(n: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; parts.length * 32 < n; i++) parts.push(createHash('sha256').update(`qentropy-${i}`).digest());
  return Buffer.concat(parts).subarray(0, n);
}

function* blocks(data: Buffer, size: number): Generator<Buffer> {
  for (let off = 0; off + size <= data.length; off += size) yield data.subarray(off, off + size);
}

describe('SP 800-90B cutoffs', () => {
  // product.md §6, from the formulas of SP 800-90B §4.4.1 and §4.4.2 at alpha = 2^-20.
  it.each([
    [8, 4, 13],
    [7.9, 4, 13],
    [7.5, 4, 15],
    [7, 4, 18],
    [6, 5, 25],
  ])('H = %s bits per byte: RCT %i, APT %i', (h, rct, apt) => {
    expect(healthCutoffs({ mode: 'bytes', minEntropy: h })).toEqual({ rct, apt, window: 512 });
  });

  it('bit mode uses a window of 1,024 (SP 800-90B Table 2: H = 1 gives 589)', () => {
    expect(healthCutoffs({ mode: 'bits', minEntropy: 1 })).toEqual({ rct: 21, apt: 589, window: 1024 });
  });

  it('rejects impossible settings', () => {
    expect(() => healthCutoffs({ minEntropy: 9 })).toThrow(RangeError);
    expect(() => healthCutoffs({ mode: 'bits', minEntropy: 2 })).toThrow(/per bit/);
    expect(() => new HealthTester({ startupSamples: 10 })).toThrow(/1024/);
  });
});

describe('HealthTester', () => {
  it('stops a stuck source (a file of zeros) at once and never trusts it', () => {
    const file = path.join(tmp, 'zeros.bin');
    fs.writeFileSync(file, Buffer.alloc(16 * 1024));
    const t = new HealthTester();
    const results = [...blocks(fs.readFileSync(file), 1024)].map((b) => t.feed(b));
    expect(results.every((r) => !r.passed && !r.ready)).toBe(true);
    expect(results[0]!.firstFailure).toMatchObject({ test: 'repetition-count', blockOffset: 3, count: 4, symbol: 0 });
    expect(results[0]!.firstFailure!.message).toMatch(/repetition-count test failed at sample 3/);
    expect(t.stats().blocksFailed).toBe(16);
  });

  it('stops a source repeating a short pattern (APT)', () => {
    const file = path.join(tmp, 'pattern.bin');
    fs.writeFileSync(file, Buffer.from('0123456789abcdef'.repeat(512)));
    const t = new HealthTester();
    const r = t.feed(fs.readFileSync(file).subarray(0, 1024));
    expect(r.passed).toBe(false);
    expect(r.firstFailure?.test).toBe('adaptive-proportion');
    expect(t.stats().rctFailures).toBe(0);
  });

  it('passes good data block after block and becomes ready after 1,024 samples', () => {
    const t = new HealthTester({ minEntropy: 8 });
    const data = goodBytes(64 * 1024);
    const first = t.feed(data.subarray(0, 1000));
    expect(first).toEqual({ passed: true, ready: false, failures: 0 });
    expect(t.feed(data.subarray(1000, 1024)).ready).toBe(true);
    for (const b of blocks(data.subarray(1024), 1024)) expect(t.feed(b).passed).toBe(true);
    expect(t.stats()).toMatchObject({ rctFailures: 0, aptFailures: 0, blocksFailed: 0, samples: 64 * 1024 });
  });

  it('after a failure, start-up tests run again', () => {
    const t = new HealthTester();
    const data = goodBytes(4096);
    expect(t.feed(data.subarray(0, 2048)).ready).toBe(true);
    expect(t.feed(Buffer.alloc(8, 0x42)).ready).toBe(false);
    expect(t.feed(data.subarray(2048, 3000)).ready).toBe(false);
    expect(t.feed(data.subarray(3000, 4096)).ready).toBe(true);
  });

  it('bit mode catches a biased bit source', () => {
    const t = new HealthTester({ mode: 'bits', minEntropy: 1 });
    expect(t.feed(goodBytes(1024)).passed).toBe(true);
    const biased = Buffer.alloc(1024, 0xf7); // 7 of 8 bits set
    const r = t.feed(biased);
    expect(r.passed).toBe(false);
    expect(t.stats().aptFailures).toBeGreaterThan(0);
  });

  it('rejects non-byte input', () => {
    const t = new HealthTester();
    expect(() => t.feed(new Uint16Array(4) as unknown as Uint8Array)).toThrow(TypeError);
  });
});

describe('Fips140Tester', () => {
  it("passes NIST's SHA-1 generator output (50 blocks)", () => {
    const data = fs.readFileSync(path.join(vectors, 'data.sha1'));
    const t = new Fips140Tester();
    for (const b of blocks(data, FIPS140_BLOCK_BYTES)) expect(t.testBlock(b).failed).toEqual([]);
    expect(t.stats()).toMatchObject({ blocks: 50, blocksFailed: 0 });
  });

  it('fails a block of zeros on all five tests', () => {
    const t = new Fips140Tester();
    const r = t.testBlock(Buffer.alloc(FIPS140_BLOCK_BYTES));
    expect(r.failed).toEqual(['monobit', 'poker', 'runs', 'long-run', 'continuous-run']);
    expect(r.ones).toBe(0);
    expect(r.poker).toBe(75000); // 16/5000 * 5000^2 - 5000
    expect(t.stats().failures['long-run']).toBe(1);
  });

  it('needs exactly 2,500 bytes', () => {
    expect(() => new Fips140Tester().testBlock(Buffer.alloc(2499))).toThrow(RangeError);
  });

  it('tests a batch of blocks on a worker thread with the verdicts of block-by-block testing, in call order', async () => {
    // NIST's SHA-1 output, block 4 made all ones (monobit, poker, runs, long run) and block
    // 30 opened with block 29's last word (continuous test), split into two batches at 30
    // so the continuous test must carry across them; both handed over at once.
    const data = Buffer.from(fs.readFileSync(path.join(vectors, 'data.sha1')));
    const B = FIPS140_BLOCK_BYTES;
    data.fill(0xff, 4 * B, 5 * B);
    data.copy(data, 30 * B, 30 * B - 4, 30 * B);
    const batched = new Fips140Tester();
    const first = batched.testBlocks(data.subarray(0, 30 * B));
    // The work is on a worker thread, not this turn: the tester is busy until it settles.
    expect(() => batched.testBlock(data.subarray(0, B))).toThrow(/testing a batch/);
    const second = batched.testBlocks(data.subarray(30 * B, 50 * B));
    const [a, b] = await Promise.all([first, second]);

    const single = new Fips140Tester();
    const expected = [...blocks(data, B)].map((block) => single.testBlock(block));
    expect([...a.passed, ...b.passed]).toEqual(expected.map((r) => (r.passed ? 1 : 0)));
    const failures = [...a.failures, ...b.failures.map((f) => ({ ...f, index: f.index + 30 }))];
    expect(failures).toEqual(
      expected.flatMap((r, index) => (r.passed ? [] : [{ index, failed: r.failed, message: r.message }])),
    );
    expect(failures.map((f) => f.index)).toEqual([4, 30]);
    expect(failures[1]!.failed).toEqual(['continuous-run']);
    expect(batched.stats()).toEqual(single.stats());
  });

  it('refuses a batch that is not whole 2,500-byte blocks, and stays usable', async () => {
    const t = new Fips140Tester();
    await expect(t.testBlocks(Buffer.alloc(2 * FIPS140_BLOCK_BYTES + 1))).rejects.toThrow(RangeError);
    await expect(t.testBlocks(Buffer.alloc(0))).rejects.toThrow(RangeError);
    const r = await t.testBlocks(Buffer.alloc(FIPS140_BLOCK_BYTES));
    expect([...r.passed]).toEqual([0]);
    expect(r.failures[0]!.failed).toContain('monobit');
  });
});

describe('PatternTester', () => {
  it('tests a whole response at once with the verdicts of block-by-block testing', () => {
    // 130 blocks (two bit-sliced groups of 64 and a remainder): good data with a replayed
    // block, an LFSR-like (xorshift) block and a block of zeros among them.
    const data = goodBytes(130 * 1024);
    data.copy(data, 40 * 1024, 10 * 1024, 11 * 1024);
    let x = 0x9e3779b97f4a7c15n;
    for (let i = 0; i < 1024; i++) {
      x ^= (x << 13n) & 0xffffffffffffffffn;
      x ^= x >> 7n;
      x ^= (x << 17n) & 0xffffffffffffffffn;
      data[70 * 1024 + i] = Number(x & 0xffn);
    }
    data.fill(0, 100 * 1024, 101 * 1024);
    const batch = new PatternTester().testBlocks(data, 1024);
    const single = new PatternTester();
    const oneByOne = [...blocks(data, 1024)].map((b, index) => ({ index, ...single.testBlock(b) })).filter((r) => !r.passed);
    expect(batch).toEqual(oneByOne);
    expect(batch.map((f) => f.index)).toEqual(expect.arrayContaining([40, 70, 100]));
    expect(batch.find((f) => f.index === 70)?.linear).toBe(true);
  });

  it('rejects a block size that does not divide the data', () => {
    expect(() => new PatternTester().testBlocks(Buffer.alloc(1000), 1024)).toThrow(RangeError);
    expect(() => new PatternTester().testBlocks(Buffer.alloc(1024), 0)).toThrow(RangeError);
  });
});
