// The feeder pipeline in process, against a REAL local entropy server (TLS, accounts on
// SQLite): exactly the bytes that passed reach the file sink, failing blocks never do,
// a source that keeps failing is disabled, 401 stops pulling, an outage is ridden out
// from the buffer and recovered from, and the kernel sink really calls RNDADDENTROPY.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { loadConfig } from '../src/config/index.js';
import { FeedBuffer, Feeder, FileSink, KernelSink } from '../src/feeder/index.js';
import { FeederSource, type FeederSourceOptions, type SourceEvents, type SourceStatus } from '../src/feeder/source.js';
import { NativeGate } from '../src/native/gate.js';
import { Fips140Tester, FIPS140_BLOCK_BYTES } from '../src/native/health.js';
import { KernelRandom } from '../src/native/kernel.js';
import { FeederRole } from '../src/roles/feeder.js';
import { captureLogger, goodBlock, stuckBlock, testSourceOptions, Upstream, waitFor } from './feeder-harness.js';
import { scaled } from './helpers/time.js';

const isRoot = process.getuid?.() === 0;
let dir: string;
let upstream: Upstream;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-feeder-'));
  upstream = await Upstream.create();
  await upstream.start();
});
// A stopped feeder's last request may still be on its way to the server; a restart waits
// for it (Fastify's close drains requests in flight), so it cannot take the bytes the next
// test puts in the pool. Under load it did, and that test's source saw only 503s.
beforeEach(async () => {
  await upstream.stop();
  await upstream.start();
});
afterAll(async () => {
  await upstream?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function sourceOptions(token: string, extra: Partial<FeederSourceOptions> = {}): FeederSourceOptions {
  return testSourceOptions(upstream, token, extra);
}

/**
 * What a wait for the file sink saw when it timed out: the source's and the sink's status,
 * the upstream pool's level and the feeder's log. This wait timed out twice in CI in many
 * runs (stop 20; 2026-11-27, Node 24), never here; the next time it says where it stopped.
 */
function sawFileSink(feeder: Feeder, lines?: () => Array<Record<string, unknown>>): () => string {
  return () => {
    const status = feeder.statusNow();
    const log = lines ? lines().map((l) => String(l.msg)) : [];
    return `the file sink; saw ${JSON.stringify({ source: status.sources[0], sink: status.sinks[0], upstreamPool: upstream.pool.level, log })}`;
  };
}

describe('feeder pipeline', () => {
  it('the file sink receives exactly the blocks that passed, in order; failing blocks never reach it', async () => {
    const blocks = [goodBlock(), Buffer.alloc(1024), goodBlock(), stuckBlock(), goodBlock(), goodBlock(), stuckBlock(), goodBlock()];
    const expected = Buffer.concat(blocks.filter((_, i) => ![1, 3, 6].includes(i)));
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(blocks));
    const file = path.join(dir, 'passed.bin');
    const { logger, lines } = captureLogger();
    const feeder = new Feeder({
      // One request for exactly what the server holds (it answers 503 for more).
      sources: [sourceOptions(await upstream.token(), { blocksPerRequest: 8 })],
      sinks: [new FileSink({ path: file, bytes: 1000, intervalMs: 0 })],
      buffer: new FeedBuffer({ capacity: 16 * 1024 }),
      logger,
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.bytesFed >= expected.length, 60_000, sawFileSink(feeder, lines));
    await feeder.stop();
    expect(fs.readFileSync(file).equals(expected)).toBe(true);
    expect((fs.statSync(file).mode & 0o777).toString(8)).toBe('600');
    const status = feeder.statusNow();
    // Exactly what was dropped, and by which test: the zero block and both stuck blocks.
    expect(status.sources[0]).toMatchObject({ bytesPulled: 8 * 1024, bytesPassed: 5 * 1024, bytesAwaitingFips: 0 });
    expect(status.sources[0]!.bytesDropped).toEqual({
      'repetition-count': 3 * 1024, 'adaptive-proportion': 0, pattern: 0, fips140: 0, startup: 0, 'not-random': 0, 'out-of-service': 0,
    });
    expect(status.sources[0]!.failures).toEqual({ 'repetition-count': 3, 'adaptive-proportion': 0, pattern: 0, fips140: 0 });
    expect(status.healthFailures['repetition-count']).toBe(3);
    expect(status.sinks[0]).toMatchObject({ bytesFed: expected.length, errors: 0 });
    const dropped = lines().filter((l) => l.msg === 'block failed a health test and was dropped');
    expect(dropped).toHaveLength(3);
    // Prometheus exposition of the same numbers.
    const metrics = await feeder.registry.metrics();
    expect(metrics).toMatch(new RegExp(`qentropy_feeder_bytes_fed_total\\{sink="file:${file.replace(/[/.]/g, '\\$&')}",kind="file"\\} ${expected.length}`));
    expect(metrics).toMatch(/qentropy_feeder_health_failures_total\{source="[^"]+",test="repetition-count"\} 3\n/);
    expect(metrics).toMatch(/qentropy_feeder_bytes_dropped_total\{source="[^"]+",reason="repetition-count"\} 3072\n/);
    expect(metrics).toMatch(/qentropy_feeder_bytes_passed_total\{source="[^"]+"\} 5120\n/);
    expect(metrics).toMatch(/qentropy_feeder_buffer_level_bytes 0/);
  });

  it('with FIPS 140-2 on, the file sink receives exactly the 2,500-byte windows that passed, in order, across responses', async () => {
    // 48 KiB in 3 responses of 16 blocks: 19 whole FIPS windows, of which the third has bit
    // 0 of every byte set (56 % ones: it fails the monobit test, while its bytes still pass
    // RCT, APT and the pattern check). Drawn again until the same tests, run here, say so.
    const FIPS = FIPS140_BLOCK_BYTES;
    let stream: Buffer;
    for (;;) {
      stream = Buffer.concat(Array.from({ length: 48 }, () => goodBlock()));
      for (let i = 2 * FIPS; i < 3 * FIPS; i++) stream[i]! |= 1;
      const verdicts = await new NativeGate({ minEntropy: 7.5, alphaLog2: 20 }).test(stream);
      const fips = new Fips140Tester();
      const windows = Array.from({ length: 19 }, (_, w) => fips.testBlock(stream.subarray(w * FIPS, (w + 1) * FIPS)).passed);
      if (verdicts.every((v) => v.healthPassed && v.patternPassed) && windows.every((ok, w) => ok === (w !== 2))) break;
    }
    // (The windows after it in the same response are moved up past it.)
    const expected = Buffer.concat([stream.subarray(0, 2 * FIPS), stream.subarray(3 * FIPS, 19 * FIPS)]);
    upstream.pool.clear();
    upstream.pool.put(Buffer.from(stream));
    const file = path.join(dir, 'fips-passed.bin');
    const feeder = new Feeder({
      sources: [sourceOptions(await upstream.token(), { blocksPerRequest: 16, fips140: true })],
      sinks: [new FileSink({ path: file, bytes: 1000, intervalMs: 0 })],
      buffer: new FeedBuffer({ capacity: 64 * 1024 }),
      logger: captureLogger().logger,
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.bytesFed >= expected.length, 60_000, sawFileSink(feeder));
    const status = feeder.statusNow();
    await feeder.stop();
    expect(fs.readFileSync(file).equals(expected)).toBe(true);
    expect(status.sources[0]).toMatchObject({ bytesPulled: 48 * 1024, bytesPassed: 18 * FIPS, bytesAwaitingFips: 48 * 1024 - 19 * FIPS });
    expect(status.sources[0]!.bytesDropped.fips140).toBe(FIPS);
    expectBytesAccountedFor(status.sources[0]!);
  });

  it('a source whose blocks keep failing is disabled with a clear message, and nothing is fed', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.alloc(8 * 1024, 0x42));
    const file = path.join(dir, 'never.bin');
    const { logger, lines } = captureLogger();
    const feeder = new Feeder({
      sources: [sourceOptions(await upstream.token(), { failureLimit: 4, blocksPerRequest: 8 })],
      sinks: [new FileSink({ path: file, bytes: 1024, intervalMs: 0 })],
      buffer: new FeedBuffer({ capacity: 16 * 1024 }),
      logger,
    });
    await feeder.start();
    // (It once timed out in CI on Node 22, loaded: the status then says what the source saw.)
    await waitFor(
      () => feeder.statusNow().sources[0]!.state === 'disabled',
      60_000,
      () => `the source to be disabled; its status: ${JSON.stringify(feeder.statusNow().sources[0])}`,
    );
    const status = feeder.statusNow();
    await feeder.stop();
    expect(status.sources[0]!.lastError).toMatch(/4 blocks in a row failed the SP 800-90B health tests/);
    expect(status.sources[0]!.retryAt).toBeGreaterThan(Date.now());
    expect(fs.statSync(file).size).toBe(0);
    expect(lines().some((l) => String(l.msg).startsWith('entropy source disabled') && l.level === 50)).toBe(true);
  });

  it('401 stops pulling with a clear message (no further requests)', async () => {
    upstream.pool.clear();
    upstream.pool.put(goodBlock());
    const { logger, lines } = captureLogger();
    const before = await upstream.requests(401);
    const feeder = new Feeder({
      sources: [sourceOptions('not-a-valid-token')],
      sinks: [new FileSink({ path: path.join(dir, 'unauth.bin'), bytes: 64, intervalMs: 0 })],
      buffer: new FeedBuffer({ capacity: 8 * 1024 }),
      logger,
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sources[0]!.state === 'stopped', 60_000, 'the source to stop');
    await new Promise((r) => setTimeout(r, 300));
    expect(await upstream.requests(401)).toBe(before + 1);
    const status = feeder.statusNow();
    await feeder.stop();
    expect(status.sources[0]!.lastError).toMatch(/access token rejected \(401\).*pulling from .* stopped until the config changes/);
    expect(lines().some((l) => String(l.msg).includes('entropy source stopped') && String(l.msg).includes('401'))).toBe(true);
    expect(status.sinks[0]!.bytesFed).toBe(0);
  });

  it('rides out an upstream outage from the buffer, waits when dry, and recovers when the server returns', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(Array.from({ length: 8 }, goodBlock)));
    const file = path.join(dir, 'outage.bin');
    const { logger, lines } = captureLogger();
    const feeder = new Feeder({
      sources: [sourceOptions(await upstream.token(), { blocksPerRequest: 4 })],
      sinks: [new FileSink({ path: file, bytes: 512, intervalMs: 50 })],
      buffer: new FeedBuffer({ capacity: 8 * 1024, lowWater: 1024 }),
      logger,
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().bytesPulled === 8 * 1024, 30_000, 'the first pull');
    await upstream.stop();
    // The buffer keeps the sink going without the server: everything pulled is fed, the
    // refill the low-water mark asks for fails, and the sink waits on the empty buffer. (How
    // much was fed before the server went down depends on the machine's speed, so it is not
    // asserted; right after the pull the sink may even still wait for health-tested bytes.)
    await waitFor(() => {
      const s = feeder.statusNow();
      return s.sinks[0]!.bytesFed === 8 * 1024 && s.sinks[0]!.state === 'waiting' && s.sources[0]!.state === 'retrying';
    }, 60_000, 'the buffer to run dry while the server is down');
    const dry = feeder.statusNow();
    expect(dry.sources[0]!.lastError).toMatch(/failed|ECONNREFUSED/);
    const recoveredLines = () => lines().filter((l) => l.msg === 'entropy source recovered');
    expect(recoveredLines()).toHaveLength(0);
    // Back up on the same port, with fresh supply: more than the buffer holds, so the source
    // keeps being answered (never refused for an empty pool) however slowly the sink runs.
    const fresh = Buffer.concat(Array.from({ length: 64 }, goodBlock));
    upstream.pool.put(Buffer.from(fresh));
    await upstream.start();
    // One line says the source recovered (and what was wrong before), and feeding resumes.
    await waitFor(() => recoveredLines().length === 1 && feeder.statusNow().sinks[0]!.bytesFed >= 9 * 1024, 60_000, 'feeding to resume');
    // Active again: the old ECONNREFUSED is no longer shown as the last error.
    const back = feeder.statusNow().sources[0]!;
    expect(back.state).toBe('active');
    expect(back.lastError).toBeUndefined();
    expect(String(recoveredLines()[0]!.after)).toMatch(/failed|ECONNREFUSED/);
    await waitFor(() => feeder.statusNow().sinks[0]!.bytesFed >= 16 * 1024, 60_000, 'the fresh bytes to be fed');
    await feeder.stop();
    // Nothing was lost or doubled across the outage: the file holds what the sink fed, and
    // after the first 8 KiB it continues with exactly the fresh supply, from its start.
    const written = fs.readFileSync(file);
    const fed = feeder.statusNow().sinks[0]!.bytesFed;
    expect(written.length).toBe(fed);
    expect(written.subarray(8 * 1024).equals(fresh.subarray(0, fed - 8 * 1024))).toBe(true);
    expect(recoveredLines()).toHaveLength(1);
  });

  it.skipIf(!isRoot)('as root: the kernel sink really calls RNDADDENTROPY + RNDRESEEDCRNG and credits what it was told', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(Array.from({ length: 8 }, goodBlock)));
    const { logger } = captureLogger();
    const feeder = new Feeder({
      sources: [sourceOptions(await upstream.token(), { blocksPerRequest: 8 })],
      sinks: [new KernelSink({ device: '/dev/random', creditBitsPerByte: 1, bytes: 128, intervalMs: 100 })],
      buffer: new FeedBuffer({ capacity: 8 * 1024 }),
      logger,
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.feeds >= 3, 60_000, 'three kernel feeds');
    const status = await feeder.status();
    await feeder.stop();
    const sink = status.sinks[0]!;
    expect(sink).toMatchObject({ name: 'kernel', state: 'ok', errors: 0 });
    expect(sink.bytesFed).toBe(sink.feeds * 128);
    expect(sink.creditedBits).toBe(sink.feeds * 128);
    // RNDGETENTCNT, read back by the sink after its add, and again here independently.
    expect(sink.details!.entropyCount).toBeGreaterThan(0);
    const dev = new KernelRandom('/dev/random');
    expect(dev.entropyCount()).toBeGreaterThan(0);
    dev.close();
  });
});

/** Every pulled byte is accounted for exactly once. */
function expectBytesAccountedFor(source: SourceStatus): void {
  const dropped = Object.values(source.bytesDropped).reduce((a, b) => a + b, 0);
  expect(source.bytesPassed + dropped + source.bytesAwaitingFips).toBe(source.bytesPulled);
}

function counterStream(bytes: number): Buffer {
  const out = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) out[i] = i & 0xff;
  return out;
}

/** A 32-bit Galois LFSR (taps 32, 22, 2, 1), one output bit per step, packed MSB first. */
function lfsrStream(bytes: number): Buffer {
  const out = Buffer.alloc(bytes);
  let state = 0xace1beef;
  for (let i = 0; i < bytes * 8; i++) {
    const bit = state & 1;
    state >>>= 1;
    if (bit) state ^= 0x80200003;
    if (bit) out[i >> 3]! |= 0x80 >> (i & 7);
  }
  return out;
}

/** Random bits that are ones with probability 0.5125: FIPS 140-2's monobit test fails about a third of its blocks. */
function biasedStream(bytes: number): Buffer {
  const out = Buffer.alloc(bytes);
  const draws = crypto.randomBytes(bytes * 8 * 2);
  for (let i = 0; i < bytes * 8; i++) {
    if (draws.readUInt16LE(2 * i) < 0.5125 * 65536) out[i >> 3]! |= 0x80 >> (i & 7);
  }
  return out;
}

describe('pulling ahead (issue 30)', () => {
  const quiet: SourceEvents = {
    blockFailed() {},
    disabled() {},
    untrusted() {},
    stopped() {},
    retrying() {},
    recovered() {},
    returned() {},
  };

  it('asks for the next response as soon as this one has arrived, and the next pull takes it: every byte once, in order', async () => {
    upstream.pool.clear();
    const blocks = Array.from({ length: 48 }, () => goodBlock());
    upstream.pool.put(Buffer.concat(blocks));
    const source = new FeederSource(sourceOptions(await upstream.token(), { blocksPerRequest: 16 }), quiet);
    const signal = new AbortController().signal;
    const first = Buffer.from(await source.pull(16 * 1024, signal, 16 * 1024));
    // The request for the next 16 blocks went out before the first pull was done.
    await waitFor(async () => (await upstream.requests(200)) === 2, 10_000, 'the request sent ahead');
    const second = Buffer.from(await source.pull(16 * 1024, signal));
    expect(await upstream.requests(200)).toBe(2);
    // Every block of both responses, in stream order (the first completes the start-up tests).
    expect(Buffer.concat([first, second]).equals(Buffer.concat(blocks.slice(0, 32)))).toBe(true);
    expect(source.status.bytesPulled).toBe(32 * 1024);
    await source.close();
  });

  it('a source disabled while its next response is on the way: that response is called off and never used', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(Array.from({ length: 8 }, () => stuckBlock())));
    upstream.pool.put(Buffer.concat(Array.from({ length: 8 }, () => goodBlock())));
    const source = new FeederSource(sourceOptions(await upstream.token(), { blocksPerRequest: 8, failureLimit: 4 }), quiet);
    const signal = new AbortController().signal;
    const passed = await source.pull(8 * 1024, signal, 8 * 1024);
    expect(passed.length).toBe(0);
    expect(source.status.state).toBe('disabled');
    // Nothing of the response asked for ahead was counted as pulled, and nothing else is
    // pulled while the source is disabled.
    expect(source.status.bytesPulled).toBe(8 * 1024);
    expect(source.available()).toBe(false);
    await source.close();
  });
});

describe('back in service', () => {
  it('with FIPS 140-2 on, a window begun before the source was disabled is dropped, not joined to bytes after the gap', async () => {
    // A server of its own, on a port no earlier test's client knows: every byte of its pool
    // is this test's, so a pull can never be left waiting on a pool someone else drained.
    const own = await Upstream.create();
    await own.start();
    const FIPS = FIPS140_BLOCK_BYTES;
    const quiet: SourceEvents = { blockFailed() {}, disabled() {}, untrusted() {}, stopped() {}, retrying() {}, recovered() {}, returned() {} };
    // 3 good blocks (one FIPS window and 572 bytes of the next), then 4 stuck ones: disabled.
    own.pool.put(Buffer.concat([goodBlock(), goodBlock(), goodBlock(), ...Array.from({ length: 4 }, () => stuckBlock())]));
    const after = Buffer.concat(Array.from({ length: 6 }, () => goodBlock()));
    own.pool.put(Buffer.from(after)); // the server erases what it serves
    const source = new FeederSource(testSourceOptions(own, await own.token(), { blocksPerRequest: 7, failureLimit: 4, retryAfterMs: 0, fips140: true }), quiet);
    // A pull that still has no answer by then fails, naming the server's 503s, instead of
    // retrying until the test times out.
    const signal = AbortSignal.timeout(scaled(30_000));
    const pull = (bytes: number) =>
      source.pull(bytes, signal).catch(async (err: unknown) => {
        throw new Error(`pull of ${bytes} bytes: ${String(err)} (the server answered 503 ${await own.requests(503)} times)`);
      });
    try {
      const first = await pull(7 * 1024);
      expect(first.length).toBe(FIPS);
      expect(source.status).toMatchObject({ state: 'disabled', bytesAwaitingFips: 3 * 1024 - FIPS });

      expect(source.available()).toBe(true);
      expect(source.status.bytesAwaitingFips).toBe(0);
      expect(source.status.bytesDropped['out-of-service']).toBe(3 * 1024 - FIPS);
      // After the gap the windows are the new bytes' alone (the block that completes the
      // new start-up tests is used, as at the first start).
      const second = Buffer.from(await pull(6 * 1024));
      expect(second.equals(after.subarray(0, 2 * FIPS))).toBe(true);
      expect(source.status.bytesAwaitingFips).toBe(6 * 1024 - 2 * FIPS);
      expectBytesAccountedFor(source.status);
    } finally {
      await source.close();
      await own.close();
    }
  });
});

describe('deterministic streams never reach a sink', () => {
  async function feedFrom(stream: Buffer, extra: Partial<FeederSourceOptions> = {}) {
    upstream.pool.clear();
    upstream.pool.put(Buffer.from(stream));
    const file = path.join(dir, `det-${crypto.randomBytes(4).toString('hex')}.bin`);
    const { logger, lines } = captureLogger();
    const sinks = [new FileSink({ path: file, bytes: 1024, intervalMs: 0 })];
    if (isRoot) sinks.push(new KernelSink({ device: '/dev/random', creditBitsPerByte: 0, bytes: 64, intervalMs: 10 }) as never);
    const feeder = new Feeder({
      sources: [sourceOptions(await upstream.token(), { blocksPerRequest: 16, fips140: true, ...extra })],
      sinks,
      buffer: new FeedBuffer({ capacity: 16 * 1024 }),
      logger,
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sources[0]!.state === 'disabled', 60_000, 'the source to be taken out of service');
    // No feed in flight: every sink has finished and waits on the (now empty) buffer.
    await waitFor(() => feeder.statusNow().sinks.every((k) => k.state === 'waiting'), 60_000, 'the sinks to wait');
    const status = feeder.statusNow();
    await feeder.stop();
    expectBytesAccountedFor(status.sources[0]!);
    return { status, source: status.sources[0]!, file, lines };
  }

  it('a byte counter (00..ff repeated), which passes RCT and APT: out of service in its first block, nothing fed', async () => {
    const { status, source, file, lines } = await feedFrom(counterStream(64 * 1024));
    expect(source.lastError).toMatch(/^not random: output repeats: 64 bytes of this block occurred 256 bytes earlier in the stream/);
    expect(source).toMatchObject({ bytesPulled: 16 * 1024, bytesPassed: 0, failures: { 'repetition-count': 0, 'adaptive-proportion': 0, pattern: 1, fips140: 0 } });
    expect(source.bytesDropped).toMatchObject({ pattern: 1024, 'out-of-service': 15 * 1024 });
    for (const sink of status.sinks) expect(sink.bytesFed).toBe(0);
    expect(fs.statSync(file).size).toBe(0);
    expect(lines().some((l) => l.level === 50 && String(l.msg).startsWith('entropy source disabled: not random'))).toBe(true);
  });

  it('an LFSR: out of service on its linear complexity, nothing fed', async () => {
    const { status, source, file } = await feedFrom(lfsrStream(64 * 1024));
    expect(source.lastError).toMatch(/^not random: linear complexity 32 of 1280 bits .*LFSR/);
    expect(source.bytesPassed).toBe(0);
    expect(source.failures.pattern).toBe(1);
    for (const sink of status.sinks) expect(sink.bytesFed).toBe(0);
    expect(fs.statSync(file).size).toBe(0);
  });

  it('a repeating 1 KiB block: out of service at the first repeat, and the first copy is dropped with it', async () => {
    const block = goodBlock();
    const { status, source, file } = await feedFrom(Buffer.concat(Array.from({ length: 64 }, () => block)));
    expect(source.lastError).toMatch(/^not random: output repeats: 64 bytes of this block occurred 1024 bytes earlier/);
    expect(source.bytesDropped).toMatchObject({ pattern: 1024, 'not-random': 1024, 'out-of-service': 14 * 1024 });
    expect(source.bytesPassed).toBe(0);
    for (const sink of status.sinks) expect(sink.bytesFed).toBe(0);
    expect(fs.statSync(file).size).toBe(0);
  });

  it('a source failing FIPS 140-2 in about a third of its windows is taken out of service at 8 failures, with exact drop counts', async () => {
    const { status, source, file } = await feedFrom(biasedStream(512 * 1024), { blocksPerRequest: 4 });
    expect(source.lastError).toMatch(/^not random: 8 of its last \d+ 2,500-byte blocks failed the FIPS 140-2 tests/);
    // (An RCT failure or two on 200 biased blocks is possible and counted on its own.)
    expect(source.failures).toMatchObject({ pattern: 0, fips140: 8 });
    expect(source.bytesDropped.fips140).toBe(8 * 2500);
    expect(source.bytesAwaitingFips).toBe(0);
    // What passed before the verdict went to the buffer; what a sink had not taken yet was
    // emptied from it, and every byte the file holds was counted as passed.
    const fed = status.sinks[0]!.bytesFed;
    expect(fs.statSync(file).size).toBe(fed);
    expect(source.bytesPassed).toBe(status.sinks.reduce((a, s) => a + s.bytesFed, 0) + status.buffer.bytesDiscarded + status.buffer.level);
  });
});

describe('counters per process life', () => {
  it('a reload (SIGHUP) keeps every counter and the uptime: monitoring sees no restart', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(Array.from({ length: 64 }, goodBlock)));
    const sub = fs.mkdtempSync(path.join(dir, 'reload-'));
    const tokenFile = path.join(sub, 'token');
    fs.writeFileSync(tokenFile, await upstream.token(), { mode: 0o600 });
    const caFile = path.join(sub, 'ca.pem');
    fs.writeFileSync(caFile, upstream.caPem);
    const file = path.join(sub, 'out.bin');
    const configFile = path.join(sub, 'qentropy.json');
    const writeConfig = (bytes: number): void =>
      fs.writeFileSync(
        configFile,
        JSON.stringify({
          stateDir: sub,
          feeder: {
            enabled: true,
            sources: [{ url: upstream.url, tokenFile, caFile, blocksPerRequest: 8 }],
            kernel: { enabled: false },
            buffer: { capacityBytes: 8192, lockMemory: false },
            files: [{ path: file, bytes, intervalMs: 0 }],
            status: { file: path.join(sub, 'status.json'), listen: false },
          },
        }),
      );
    writeConfig(1024);
    const { logger, lines } = captureLogger();
    const role = new FeederRole(loadConfig({ file: configFile }).feeder, { logger, stateDir: sub }, { configFile });
    await role.start();
    await waitFor(() => role.feeder!.statusNow().sinks[0]!.bytesFed >= 16 * 1024, 10_000, 'feeds before the reload');
    const before = role.feeder!.statusNow();
    writeConfig(2048);
    await role.reload();
    await waitFor(() => lines().some((l) => l.msg === 'feeder reloaded'), 10_000, 'the reload');
    const after = role.feeder!.statusNow();
    const metrics = await role.feeder!.registry.metrics();
    const reloaded = role.feeder!;
    await role.stop();
    expect(after.startedAt).toBe(before.startedAt);
    expect(after.sinks[0]!.feeds).toBeGreaterThanOrEqual(before.sinks[0]!.feeds);
    expect(after.sinks[0]!.bytesFed).toBeGreaterThanOrEqual(before.sinks[0]!.bytesFed);
    expect(after.sources[0]!.bytesPulled).toBeGreaterThanOrEqual(before.sources[0]!.bytesPulled);
    expect(after.sources[0]!.bytesPassed).toBeGreaterThanOrEqual(before.sources[0]!.bytesPassed);
    const fed = Number(/qentropy_feeder_bytes_fed_total\{[^}]*\} (\d+)/.exec(metrics)![1]);
    expect(fed).toBeGreaterThanOrEqual(before.sinks[0]!.bytesFed);
    // Every byte in the file is counted, across the reload.
    expect(fs.statSync(file).size).toBe(reloaded.statusNow().sinks[0]!.bytesFed);
  });
});

describe('return to service', () => {
  it('logs one line for every return to service of a source disabled as not random', async () => {
    upstream.pool.clear();
    // Two 16 KiB pulls of a counter (each takes the source out of service), then good blocks.
    upstream.pool.put(Buffer.concat([counterStream(32 * 1024), ...Array.from({ length: 16 }, goodBlock)]));
    const file = path.join(dir, 'returns.bin');
    const { logger, lines } = captureLogger();
    const feeder = new Feeder({
      sources: [sourceOptions(await upstream.token(), { blocksPerRequest: 16, retryAfterMs: 200 })],
      sinks: [new FileSink({ path: file, bytes: 1024, intervalMs: 0 })],
      buffer: new FeedBuffer({ capacity: 16 * 1024 }),
      logger,
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.bytesFed > 0, 15_000, 'the good blocks to be fed');
    await feeder.stop();
    const disabled = lines().filter((l) => String(l.msg).startsWith('entropy source disabled: not random'));
    const returned = lines().filter((l) => String(l.msg).startsWith('entropy source back in service'));
    expect(disabled).toHaveLength(2);
    expect(returned).toHaveLength(2);
    expect(String(returned[0]!.msg)).toMatch(/after being disabled \(not random: output repeats/);
    expect(returned[0]!.source).toBe(upstream.url);
  });
});
