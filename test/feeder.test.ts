// The feeder pipeline in process, against a REAL local entropy server (TLS, accounts on
// SQLite): exactly the bytes that passed reach the file sink, failing blocks never do,
// a source that keeps failing is disabled, 401 stops pulling, an outage is ridden out
// from the buffer and recovered from, and the kernel sink really calls RNDADDENTROPY.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FeedBuffer, Feeder, FileSink, KernelSink } from '../src/feeder/index.js';
import type { FeederSourceOptions } from '../src/feeder/source.js';
import { KernelRandom } from '../src/native/kernel.js';
import { captureLogger, goodBlock, stuckBlock, Upstream, waitFor } from './feeder-harness.js';

const isRoot = process.getuid?.() === 0;
let dir: string;
let upstream: Upstream;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-feeder-'));
  upstream = await Upstream.create();
  await upstream.start();
});
afterAll(async () => {
  await upstream?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function sourceOptions(token: string, extra: Partial<FeederSourceOptions> = {}): FeederSourceOptions {
  return {
    url: upstream.url,
    token,
    ca: upstream.caPem,
    blocksPerRequest: 16,
    minEntropyPerByte: 7.5,
    fips140: false,
    failureLimit: 16,
    retryAfterMs: 60_000,
    retry: { baseDelayMs: 20, maxDelayMs: 100 },
    ...extra,
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
    await waitFor(() => feeder.statusNow().sinks[0]!.bytesFed >= expected.length, 10_000, 'the file sink');
    await feeder.stop();
    expect(fs.readFileSync(file).equals(expected)).toBe(true);
    expect((fs.statSync(file).mode & 0o777).toString(8)).toBe('600');
    const status = feeder.statusNow();
    expect(status.sources[0]).toMatchObject({ blocksFailed: 3, blocksPassed: 5 });
    expect(status.healthFailures['repetition-count']).toBeGreaterThanOrEqual(3);
    expect(status.sinks[0]).toMatchObject({ bytesFed: expected.length, errors: 0 });
    const dropped = lines().filter((l) => l.msg === 'block failed a health test and was dropped');
    expect(dropped).toHaveLength(3);
    // Prometheus exposition of the same numbers.
    const metrics = await feeder.registry.metrics();
    expect(metrics).toMatch(new RegExp(`qentropy_feeder_bytes_fed_total\\{sink="file:${file.replace(/[/.]/g, '\\$&')}",kind="file"\\} ${expected.length}`));
    expect(metrics).toMatch(/qentropy_feeder_health_failures_total\{source="[^"]+",test="repetition-count"\} [1-9]/);
    expect(metrics).toMatch(/qentropy_feeder_buffer_level_bytes 0/);
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
    await waitFor(() => feeder.statusNow().sources[0]!.state === 'disabled', 10_000, 'the source to be disabled');
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
    await waitFor(() => feeder.statusNow().sources[0]!.state === 'stopped', 10_000, 'the source to stop');
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
    const { logger } = captureLogger();
    const feeder = new Feeder({
      sources: [sourceOptions(await upstream.token(), { blocksPerRequest: 4 })],
      sinks: [new FileSink({ path: file, bytes: 512, intervalMs: 50 })],
      buffer: new FeedBuffer({ capacity: 8 * 1024, lowWater: 1024 }),
      logger,
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().bytesPulled === 8 * 1024, 10_000, 'the first pull');
    await upstream.stop();
    const fedAtOutage = feeder.statusNow().sinks[0]!.bytesFed;
    // The buffer keeps the sink going, then runs dry and the sink waits.
    await waitFor(() => feeder.statusNow().sinks[0]!.state === 'waiting', 10_000, 'the buffer to run dry');
    const dry = feeder.statusNow();
    expect(dry.sinks[0]!.bytesFed).toBeGreaterThan(fedAtOutage);
    expect(dry.sinks[0]!.bytesFed).toBe(8 * 1024);
    expect(dry.sources[0]!.state).toBe('retrying');
    expect(dry.sources[0]!.lastError).toMatch(/failed|ECONNREFUSED/);
    // Back up on the same port, with fresh supply.
    const fresh = Buffer.concat(Array.from({ length: 4 }, goodBlock));
    upstream.pool.put(Buffer.from(fresh));
    await upstream.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.bytesFed >= 12 * 1024, 15_000, 'feeding to resume');
    await feeder.stop();
    const written = fs.readFileSync(file);
    expect(written.length).toBe(12 * 1024);
    expect(written.subarray(8 * 1024).equals(fresh)).toBe(true);
    // Everything pulled was fed, once: nothing was lost or doubled across the outage.
    expect(feeder.statusNow().bytesPulled).toBe(12 * 1024);
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
    await waitFor(() => feeder.statusNow().sinks[0]!.feeds >= 3, 10_000, 'three kernel feeds');
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
