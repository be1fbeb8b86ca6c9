// The combining mode (`feeder.combine: "all"`) against two REAL local entropy servers: each
// output is SHA-256 over 64 bytes of every source in use, so with one source fully known
// to the test the output is still not a function of it alone; the entropy credit follows
// SP 800-90B §3.1.5.1.2 (worked examples); a source dropping out and coming back is
// logged once each way, in status and metrics, under both drop-out policies.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { formatFeederStatus } from '../src/cli/commands/feeder.js';
import { loadConfig } from '../src/config/index.js';
import { FeedBuffer, Feeder, FileSink, KernelSink } from '../src/feeder/index.js';
import { CreditQueue } from '../src/feeder/combiner.js';
import { combinedCredit, outputEntropy } from '../src/feeder/conditioning.js';
import type { FeederSourceOptions } from '../src/feeder/source.js';
import { captureLogger, goodBlock, testSourceOptions, Upstream, waitFor } from './feeder-harness.js';

let dir: string;
let a: Upstream;
let b: Upstream;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-combine-'));
  a = await Upstream.create(8 * 1024 * 1024);
  b = await Upstream.create(8 * 1024 * 1024);
  await a.start();
  await b.start();
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function source(up: Upstream, extra: Partial<FeederSourceOptions> = {}): Promise<FeederSourceOptions> {
  return testSourceOptions(up, await up.token(), { blocksPerRequest: 4, ...extra });
}

const sha256 = (...parts: Buffer[]): Buffer => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();
const blocks = (n: number): Buffer => Buffer.concat(Array.from({ length: n }, goodBlock));
/** The k-th 64-byte input of a stream. */
const input = (stream: Buffer, k: number): Buffer => stream.subarray(64 * k, 64 * (k + 1));
function outputsOf(file: string): Buffer[] {
  const data = fs.readFileSync(file);
  return Array.from({ length: data.length / 32 }, (_, k) => data.subarray(32 * k, 32 * (k + 1)));
}

/** Runs a combining feeder over what the two servers hold until `bytes` reached the file. */
async function combineOnce(knownA: Buffer, otherB: Buffer, bytes: number): Promise<{ outputs: Buffer[]; feeder: Feeder }> {
  a.pool.clear();
  b.pool.clear();
  a.pool.put(Buffer.from(knownA));
  b.pool.put(Buffer.from(otherB));
  const file = path.join(dir, `combined-${crypto.randomBytes(4).toString('hex')}.bin`);
  const { logger } = captureLogger();
  const feeder = new Feeder({
    sources: [await source(a), await source(b)],
    sinks: [new FileSink({ path: file, bytes: 1024, intervalMs: 0 })],
    buffer: new FeedBuffer({ capacity: 8 * 1024, lockMemory: false }),
    logger,
    combine: { onDropOut: 'continue' },
  });
  await feeder.start();
  await waitFor(() => feeder.statusNow().sinks[0]!.bytesFed >= bytes, 15_000, 'combined outputs');
  await feeder.stop();
  return { outputs: outputsOf(file), feeder };
}

describe('combining mode: the conditioning', () => {
  it('with one source fully known, each output is SHA-256 over both inputs, and changes with the other source alone', async () => {
    // Enough in each pool that neither runs dry (and drops out) before the feeder stops.
    const known = blocks(64);
    const first = await combineOnce(known, blocks(64), 8 * 1024);
    expect(first.outputs.length).toBeGreaterThanOrEqual(256);
    expect(first.outputs.length).toBeLessThanOrEqual(1024);
    const status = first.feeder.statusNow();
    expect(status.combine).toMatchObject({ mode: 'all', state: 'combining', dropOuts: 0, inUse: [a.url, b.url] });
    expect(status.combine!.outputs).toBeGreaterThanOrEqual(first.outputs.length);
    const second = await combineOnce(known, blocks(64), 8 * 1024);
    const n = Math.min(first.outputs.length, second.outputs.length);
    for (let k = 0; k < n; k++) {
      // Same known input k, different other input: a different output, every time.
      expect(first.outputs[k]!.equals(second.outputs[k]!), `output ${k}`).toBe(false);
      expect(first.outputs[k]!.equals(sha256(input(known, k))), `output ${k} is not the known input's hash`).toBe(false);
    }
  });

  it('each output equals SHA-256(known input k || other input k) in order', async () => {
    const known = blocks(64);
    const other = blocks(64);
    const { outputs } = await combineOnce(known, other, 4 * 1024);
    expect(outputs.length).toBeGreaterThanOrEqual(128);
    for (let k = 0; k < outputs.length; k++) {
      expect(outputs[k]!.equals(sha256(input(known, k), input(other, k))), `output ${k}`).toBe(true);
    }
  });
});

describe('combining mode: the credit (SP 800-90B §3.1.5.1.2)', () => {
  // Reference values: Output_Entropy evaluated at 4,000-bit precision (Python mpmath) from
  // the formula in §3.1.5.1.2, psi and omega capped at 1 as in NIST's ea_conditioning.
  it.each([
    // A vendor's worked example: AES-CBC-MAC, 512 input bits at 50 % min-entropy into 128: full entropy.
    [512, 128, 128, 256, 128, 1e-12],
    // Two sources assessed 7.5 bits per byte, 64 bytes each, into SHA-256.
    [1024, 256, 256, 960, 256, 1e-12],
    // As much input entropy as output bits: one bit short of full.
    [1024, 256, 256, 256, 255, 1e-9],
    [512, 256, 256, 256, 255, 1e-9],
    // Input entropy well below the output size: h_out = h_in.
    [512, 256, 256, 128, 128, 1e-12],
    [1024, 256, 256, 200, 200, 1e-12],
    // Near the output size.
    [512, 256, 256, 260, 255.91253715874966, 1e-9],
    [512, 256, 256, 240, 239.99997798638864, 1e-9],
  ])('Output_Entropy(n_in %i, n_out %i, nw %i, h_in %d) = %d', (nIn, nOut, nw, hIn, expected, tolerance) => {
    expect(Math.abs(outputEntropy(nIn, nOut, nw, hIn) - expected)).toBeLessThan(tolerance);
    expect(outputEntropy(nIn, nOut, nw, hIn)).toBeLessThanOrEqual(Math.min(nOut, nw));
  });

  it('credits the sum of the assessed inputs, never more than the output size, nothing for an unassessed source', () => {
    // 2 x 64 bytes at 7.5 bits: 960 bits in, full entropy out: 8 bits per byte.
    expect(combinedCredit([7.5, 7.5])).toMatchObject({ inputEntropyBits: 960, creditBitsPerByte: 8 });
    // One dropped out: 480 bits in, still full.
    expect(combinedCredit([7.5])).toMatchObject({ inputEntropyBits: 480, creditBitsPerByte: 8 });
    // 2 x 64 bytes at 2 bits: 256 bits in, 255 out: 7 bits per byte; one of them: 128 out, 4 bits per byte.
    expect(combinedCredit([2, 2])).toMatchObject({ inputEntropyBits: 256, creditBitsPerByte: 7 });
    expect(combinedCredit([2])).toMatchObject({ inputEntropyBits: 128, creditBitsPerByte: 4 });
    // An unassessed source (0) is mixed in but adds nothing.
    expect(combinedCredit([0, 2])).toMatchObject({ inputEntropyBits: 128, creditBitsPerByte: 4 });
    expect(combinedCredit([0, 0])).toMatchObject({ inputEntropyBits: 0, outputEntropyBits: 0, creditBitsPerByte: 0 });
    expect(combinedCredit([8, 8, 8]).outputEntropyBits).toBeLessThanOrEqual(256);
  });

  it('a sink is told the lowest credit among the bytes it takes', () => {
    const q = new CreditQueue();
    // An empty buffer left by a reload adds nothing (and no credit of 0 for later bytes).
    q.push(0, 0);
    q.push(64, 7);
    q.push(64, 4);
    q.push(32, 7);
    expect(q.take(32)).toBe(7);
    expect(q.take(64)).toBe(4);
    expect(q.take(64)).toBe(4);
    expect(q.take(32)).toBeUndefined();
  });
});

describe('combining mode: a source dropping out and returning', () => {
  async function dropOutAndReturn(onDropOut: 'continue' | 'stop') {
    const known = blocks(1024);
    a.pool.clear();
    b.pool.clear();
    a.pool.put(Buffer.from(known));
    b.pool.put(blocks(1024));
    const file = path.join(dir, `dropout-${onDropOut}.bin`);
    const { logger, lines } = captureLogger();
    const feeder = new Feeder({
      sources: [await source(a, { assessedMinEntropyPerByte: 2 }), await source(b, { assessedMinEntropyPerByte: 2 })],
      sinks: [new FileSink({ path: file, bytes: 256, intervalMs: 5 })],
      buffer: new FeedBuffer({ capacity: 4096, lockMemory: false }),
      logger,
      combine: { onDropOut },
    });
    await feeder.start();
    const combine = () => feeder.statusNow().combine!;
    await waitFor(() => combine().outputs >= 64, 15_000, 'outputs from both');
    expect(combine()).toMatchObject({ state: 'combining', inUse: [a.url, b.url], credit: { creditBitsPerByte: 7 } });

    await b.stop();
    await waitFor(() => combine().droppedOut.includes(b.url), 15_000, 'the drop-out');
    const out = combine();
    const atDropOut = out.outputs;
    if (onDropOut === 'continue') {
      expect(out).toMatchObject({ state: 'combining', inUse: [a.url], dropOuts: 1, credit: { inputEntropyBits: 128, creditBitsPerByte: 4 } });
      // `qentropy feeder status` says the same in one line.
      const shown = formatFeederStatus({ file: 'status.json', status: feeder.statusNow(), live: true, problems: [] });
      expect(shown).toMatch(new RegExp(`^combining: SHA-256 over 1 source, \\d+ outputs, credit 4 bits per byte \\(128\\.00 of 256 per output\\); out: ${b.url.replace(/[.]/g, '\\.')}; 1 drop-out$`, 'm'));
      await waitFor(() => combine().outputs >= atDropOut + 64, 15_000, 'outputs from the rest');
    } else {
      expect(out).toMatchObject({ state: 'stopped', inUse: [a.url], dropOuts: 1 });
    }
    const metrics = await feeder.registry.metrics();
    expect(metrics).toMatch(/^qentropy_feeder_combine_dropouts_total 1$/m);
    expect(metrics).toMatch(new RegExp(`^qentropy_feeder_combine_stopped ${onDropOut === 'stop' ? 1 : 0}$`, 'm'));

    await b.start();
    await waitFor(() => combine().inUse.length === 2, 15_000, 'the return');
    await waitFor(() => combine().outputs >= atDropOut + 128, 15_000, 'outputs from both again');
    expect(combine()).toMatchObject({ state: 'combining', dropOuts: 1, credit: { creditBitsPerByte: 7 } });
    await feeder.stop();
    const logged = lines().filter((l) => String(l.msg).startsWith('combining'));
    return { logged, outputs: outputsOf(file), known };
  }

  it('onDropOut "continue": goes on from the rest with the credit recomputed; one line out, one line back', async () => {
    const { logged, outputs, known } = await dropOutAndReturn('continue');
    expect(logged.map((l) => l.msg)).toEqual([
      expect.stringMatching(/^combining: https:\/\/127\.0\.0\.1:\d+ dropped out; going on from 1 source, credit now 4 bits per byte$/),
      expect.stringMatching(/^combining: https:\/\/127\.0\.0\.1:\d+ back; 2 sources in use, credit 7 bits per byte$/),
    ]);
    expect(logged[0]!.level).toBe(40);
    // While the other was out, outputs were the known source's inputs conditioned alone.
    const alone = new Set(Array.from({ length: known.length / 64 }, (_, k) => sha256(input(known, k)).toString('hex')));
    expect(outputs.some((o) => alone.has(o.toString('hex')))).toBe(true);
  });

  it('onDropOut "stop": nothing is made from the rest; one line out, one line back', async () => {
    const { logged, outputs, known } = await dropOutAndReturn('stop');
    expect(logged.map((l) => l.msg)).toEqual([
      expect.stringMatching(/^combining stopped: https:\/\/127\.0\.0\.1:\d+ out \(feeder\.onDropOut is "stop"\); the sinks get nothing new until every source is back$/),
      expect.stringMatching(/^combining: https:\/\/127\.0\.0\.1:\d+ back; 2 sources in use, credit 7 bits per byte$/),
    ]);
    expect(logged[0]!.level).toBe(50);
    const alone = new Set(Array.from({ length: known.length / 64 }, (_, k) => sha256(input(known, k)).toString('hex')));
    expect(outputs.some((o) => alone.has(o.toString('hex')))).toBe(false);
  });
});

describe.runIf(process.getuid?.() === 0)('combining mode: the kernel is credited what the combination is worth', () => {
  it('two sources assessed at 2 bits per byte: 7 bits per byte reach RNDADDENTROPY, not the configured 8', async () => {
    a.pool.clear();
    b.pool.clear();
    a.pool.put(blocks(64));
    b.pool.put(blocks(64));
    const { logger } = captureLogger();
    const feeder = new Feeder({
      sources: [await source(a, { assessedMinEntropyPerByte: 2 }), await source(b, { assessedMinEntropyPerByte: 2 })],
      sinks: [new KernelSink({ device: '/dev/random', creditBitsPerByte: 8, bytes: 128, intervalMs: 100 })],
      buffer: new FeedBuffer({ capacity: 4096, lockMemory: false }),
      logger,
      combine: { onDropOut: 'continue' },
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.feeds >= 3, 15_000, 'three kernel feeds');
    await feeder.stop();
    const sink = feeder.statusNow().sinks[0]!;
    expect(sink.errors).toBe(0);
    expect(sink.creditedBits).toBe(sink.bytesFed * 7);
  });
});

describe('combining mode: config', () => {
  it('rejects "all" with one source, and an unknown mode, naming the key', () => {
    const file = path.join(dir, 'combine.json');
    const write = (feeder: Record<string, unknown>): void =>
      fs.writeFileSync(file, JSON.stringify({ stateDir: dir, feeder: { enabled: true, sources: [{ url: 'https://a.example', token: 't' }], files: [{ path: '/tmp/x' }], ...feeder } }));
    write({ combine: 'all' });
    expect(() => loadConfig({ file })).toThrow(/feeder\.combine: "all" combines two or more sources; feeder\.sources has 1/);
    write({ combine: 'xor' });
    expect(() => loadConfig({ file })).toThrow(/feeder\.combine: must be one of "failover", "all", got "xor"/);
    write({ combine: 'all', onDropOut: 'stop', sources: [{ url: 'https://a.example', token: 't' }, { url: 'https://b.example', token: 't' }] });
    expect(loadConfig({ file }).feeder).toMatchObject({ combine: 'all', onDropOut: 'stop' });
  });
});
