// A feeder configured with an SP 800-90B assessment of its source (feeder.health.assessment,
// a `qentropy ea --json` file): the kernel credit never exceeds the assessed min-entropy, and
// the health tests take their H from it. The assessment is of NIST's truerand_8bit sample:
// assessed H = 7.233861 bits per byte, so a configured credit of 8 becomes 7.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { resolveConfig } from '../src/config/index.js';
import { cappedCredit, healthMinEntropy, readAssessment } from '../src/ea/index.js';
import { buildFeeder, FeedBuffer } from '../src/feeder/index.js';
import { cli } from './helpers/cli.js';
import { captureLogger, goodBlock, sourceEntry, Upstream, waitFor } from './feeder-harness.js';

const isRoot = process.getuid?.() === 0;
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const nistSample = path.resolve(repoRoot, '..', 'shared', 'vectors', 'sp800-90b', 'truerand_8bit.bin');
const NIST_ASSESSED = 7.233861455178495; // truerand_8bit.non_iid.res

let dir: string;
let upstream: Upstream;
let assessment: string;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qe-feeder-ea-'));
  upstream = await Upstream.create();
  await upstream.start();
  const { code, stdout } = await cli(['ea', nistSample, '--json', '--threads', '2']);
  expect(code).toBe(0);
  assessment = path.join(dir, 'source-ea.json');
  fs.writeFileSync(assessment, stdout);
});
afterAll(async () => {
  await upstream?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('an assessment in the feeder', () => {
  it('reads the assessed H from qentropy ea --json and derives credit and health H from it', async () => {
    const h = await readAssessment(assessment, 'feeder.health.assessment');
    expect(Math.abs(h - NIST_ASSESSED)).toBeLessThanOrEqual(1e-6);
    expect(cappedCredit(8, h)).toBe(7);
    expect(cappedCredit(2, h)).toBe(2);
    expect(cappedCredit(8)).toBe(8);
    expect(healthMinEntropy(7.5, h)).toBe(h);
    expect(healthMinEntropy(6, h)).toBe(6);
  });

  it('rejects a file that is not an 8-bit assessment, naming the setting', async () => {
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{"hello": 1}');
    await expect(readAssessment(bad, 'feeder.health.assessment')).rejects.toThrow(/^feeder\.health\.assessment: .*not the output of qentropy ea --json/);
    const fourBit = path.join(dir, 'four.json');
    fs.writeFileSync(fourBit, JSON.stringify({ samples: 1, bits_per_symbol: 4, non_iid: { h_assessed: 3.6 } }));
    await expect(readAssessment(fourBit, 'feeder.health.assessment')).rejects.toThrow(/assesses 4-bit samples/);
    await expect(readAssessment(path.join(dir, 'missing.json'), 'feeder.health.assessment')).rejects.toThrow(/ENOENT/);
  });

  it.skipIf(!isRoot)('as root: the kernel is credited 7 bits per byte, not the configured 8', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(Array.from({ length: 8 }, goodBlock)));
    const config = resolveConfig({
      stateDir: dir,
      feeder: {
        enabled: true,
        sources: [await sourceEntry(upstream, dir, 8)],
        health: { assessment },
        kernel: { enabled: true, creditBitsPerByte: 8, bytes: 128, intervalMs: 100 },
      },
    }).feeder;
    expect(config.health.assessment).toBe(assessment);
    const { logger } = captureLogger();
    const feeder = await buildFeeder(config, { logger, buffer: new FeedBuffer({ capacity: 8 * 1024 }) });
    await feeder.start();
    try {
      await waitFor(() => feeder.statusNow().sinks[0]!.feeds >= 2, 10_000, 'two kernel feeds');
    } finally {
      await feeder.stop();
    }
    const sink = feeder.statusNow().sinks[0]!;
    expect(sink.errors).toBe(0);
    expect(sink.creditedBits).toBe(sink.bytesFed * 7);
  });
});
