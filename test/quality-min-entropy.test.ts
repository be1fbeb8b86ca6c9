// Every quality run also carries the SP 800-90B min-entropy of its bytes: stored with the
// run, in the full report, in /api/v1/runs and as a Prometheus gauge. The bytes here are
// NIST's own truerand_8bit sample, so the numbers are NIST's reference values.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterEach, beforeEach, expect, it } from 'vitest';

import { buildQualityApp } from '../src/quality/api.js';
import { QualityRunner } from '../src/quality/run.js';
import { formatRunReport } from '../src/quality/text-report.js';
import type { QualityBitSource } from '../src/quality/sources.js';
import { QualityStore } from '../src/quality/store.js';
import type { Db } from '../src/storage/db.js';
import { describeEachEngine } from './helpers/databases.js';
import { DownSource } from './helpers/quality-seed.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sample = fs.readFileSync(path.resolve(repoRoot, '..', 'shared', 'vectors', 'sp800-90b', 'truerand_8bit.bin'));
// NIST's truerand_8bit.non_iid.res: H_original, H_bitstring, assessed.
const NIST = { h_original: 7.8651180028995897, h_bitstring: 0.90423268189731187, assessed: 7.2338614551784950 };

/** Serves NIST's 10^6 bytes (8 streams of 10^6 bits). */
class NistSampleSource implements QualityBitSource {
  readonly name = 'nist-truerand_8bit';
  async draw(bytes: number): Promise<Buffer> {
    if (bytes !== sample.length) throw new Error(`asked for ${bytes} bytes`);
    return Buffer.from(sample);
  }
  async close(): Promise<void> {}
}

function expectNist(m: { h_original: number; h_bitstring: number; assessed: number } | null | undefined) {
  expect(m).toBeTruthy();
  expect(Math.abs(m!.h_original - NIST.h_original)).toBeLessThanOrEqual(1e-6);
  expect(Math.abs(m!.h_bitstring - NIST.h_bitstring)).toBeLessThanOrEqual(1e-6);
  expect(Math.abs(m!.assessed - NIST.assessed)).toBeLessThanOrEqual(1e-6);
}

describeEachEngine('quality runs carry min-entropy', (engine) => {
  let db: Db;
  let store: QualityStore;
  beforeEach(async () => {
    await engine.reset();
    db = await engine.open();
    store = await QualityStore.open(db);
  });
  afterEach(() => db.close());

  it('stores it with the run and shows it in the report, /api/v1/runs and /metrics', async () => {
    const outcome = await new QualityRunner({ store, source: new NistSampleSource(), streams: 8, bitsPerStream: 1_000_000, threads: 2 }).run();
    expect(outcome.status).toBe('completed');
    const errorRun = await new QualityRunner({ store, source: new DownSource(), streams: 8, bitsPerStream: 1_000_000 }).run();
    expect(errorRun.status).toBe('error');

    const [row] = await db.query<{ min_entropy: number; min_entropy_original: number; min_entropy_bitstring: number }>(
      'SELECT min_entropy, min_entropy_original, min_entropy_bitstring FROM quality_runs WHERE id = $1',
      [outcome.id],
    );
    expectNist({ h_original: Number(row!.min_entropy_original), h_bitstring: Number(row!.min_entropy_bitstring), assessed: Number(row!.min_entropy) });

    const app = await buildQualityApp({ store, logger: false });
    try {
      const report = (await app.inject({ url: `/api/v1/runs/${outcome.id}` })).json() as { min_entropy: { samples: number } & typeof NIST };
      expect(report.min_entropy.samples).toBe(1_000_000);
      expectNist(report.min_entropy);
      // `qentropy quality run` / `quality report` print it in the header.
      expect(formatRunReport({ id: outcome.id, ...report })).toContain(
        `min-entropy: ${NIST.assessed.toFixed(6)} bits per byte (SP 800-90B non-IID on 1000000 bytes`,
      );

      const runs = (await app.inject({ url: '/api/v1/runs?num=5' })).json() as { id: number; min_entropy: typeof NIST | null }[];
      expect(runs).toHaveLength(2);
      expect(runs.find((r) => r.id === errorRun.id)!.min_entropy).toBeNull();
      expectNist(runs.find((r) => r.id === outcome.id)!.min_entropy);

      // The spec's record shapes do not change.
      const logs = (await app.inject({ url: '/api/v1/logs?num=1' })).json() as Record<string, unknown>[];
      expect(logs[0]).not.toHaveProperty('min_entropy');

      const metrics = (await app.inject({ url: '/metrics' })).body;
      const gauge = (estimate: string) => Number(new RegExp(`qentropy_quality_min_entropy_bits\\{estimate="${estimate}"\\} (\\S+)`).exec(metrics)?.[1]);
      expect(Math.abs(gauge('assessed') - NIST.assessed)).toBeLessThanOrEqual(1e-6);
      expect(Math.abs(gauge('original') - NIST.h_original)).toBeLessThanOrEqual(1e-6);
      expect(Math.abs(gauge('bitstring') - NIST.h_bitstring)).toBeLessThanOrEqual(1e-6);
    } finally {
      await app.close();
    }
  });
});
