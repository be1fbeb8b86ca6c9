// The quality listener's /metrics as an operator alerts on it (issue 27 item 10): the
// newest run's time, verdict and success ratios, the newest tested run's time, run counts
// by outcome, the interval; and docs/quality.md's example alerting rules, checked by
// promtool and against the metrics really exported.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildQualityApp } from '../src/quality/api.js';
import { QualityStore } from '../src/quality/store.js';
import type { Db } from '../src/storage/db.js';
import { describeEachEngine } from './helpers/databases.js';
import { docBlocks } from './helpers/docs.js';
import { seedRun } from './helpers/quality-seed.js';

const LAYOUT = { streams: 60, bitsPerStream: 100_000 };
const havePromtool = spawnSync('sh', ['-c', 'command -v promtool']).status === 0;

/** `name{labels} value` lines of an exposition, as a map. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

describeEachEngine('quality metrics', (engine) => {
  let db: Db;
  let store: QualityStore;
  let app: FastifyInstance;
  const now = Date.now();
  const seconds = (ms: number) => ms / 1000;

  beforeAll(async () => {
    await engine.reset();
    db = await engine.open();
    store = await QualityStore.open(db);
    await seedRun(store, 'pass', now - 3_600_000, LAYOUT); // before the listener: not counted
    app = await buildQualityApp({ store, logger: false, intervalSeconds: 600 });
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  const scrape = async () => {
    const r = await app.inject({ url: '/metrics' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toContain('text/plain');
    return r.body;
  };

  it("exports the newest run's time, verdict and success ratios, and counts runs by outcome", async () => {
    let m = samples(await scrape());
    expect(m.get('qentropy_quality_interval_seconds')).toBe(600);
    for (const outcome of ['passed', 'failed', 'error']) expect(m.get(`qentropy_quality_runs_total{outcome="${outcome}"}`)).toBe(0);
    expect(m.get('qentropy_quality_last_run_verdict{verdict="passed"}')).toBe(1);
    expect(m.get('qentropy_quality_last_run_verdict{verdict="failed"}')).toBe(0);

    const failedAt = now - 1_200_000;
    const failId = await seedRun(store, 'fail', failedAt, LAYOUT);
    const failed = (await store.getRunRow(failId))!.record!;
    expect(failed.tests_passed).toBe(false);
    m = samples(await scrape());
    expect(m.get('qentropy_quality_runs_total{outcome="failed"}')).toBe(1);
    expect(m.get('qentropy_quality_last_run_verdict{verdict="failed"}')).toBe(1);
    expect(m.get('qentropy_quality_last_run_verdict{verdict="passed"}')).toBe(0);
    expect(m.get('qentropy_quality_last_run_timestamp_seconds')).toBe(seconds(failedAt));
    expect(m.get('qentropy_quality_last_run_success_ratio{criterion="nist"}')).toBeCloseTo(failed.nist_success_rate!, 9);
    expect(m.get('qentropy_quality_last_run_success_ratio{criterion="uniformity"}')).toBeCloseTo(failed.uniformity_success_rate!, 9);

    // An error run is the newest run, but not the newest tested one.
    const errorAt = now - 600_000;
    await seedRun(store, 'error', errorAt, LAYOUT);
    await seedRun(store, 'pass', now - 1000, LAYOUT);
    const [first, second] = await Promise.all([scrape(), scrape()]); // concurrent scrapes count each run once
    expect(samples(first).get('qentropy_quality_runs_total{outcome="error"}')).toBe(1);
    m = samples(second);
    expect(m.get('qentropy_quality_runs_total{outcome="error"}')).toBe(1);
    expect(m.get('qentropy_quality_runs_total{outcome="passed"}')).toBe(1);
    expect(m.get('qentropy_quality_runs_total{outcome="failed"}')).toBe(1);
    expect(m.get('qentropy_quality_last_run_verdict{verdict="passed"}')).toBe(1);
    expect(m.get('qentropy_quality_last_tested_run_timestamp_seconds')).toBe(seconds(now - 1000));
  }, 120_000);

  it('shows the error run as the newest verdict while the tested time stays at the run before', async () => {
    const errorAt = Date.now();
    const before = samples(await scrape()).get('qentropy_quality_last_tested_run_timestamp_seconds');
    await seedRun(store, 'error', errorAt, LAYOUT);
    const m = samples(await scrape());
    expect(m.get('qentropy_quality_last_run_verdict{verdict="error"}')).toBe(1);
    expect(m.get('qentropy_quality_last_run_timestamp_seconds')).toBe(seconds(errorAt));
    expect(m.get('qentropy_quality_last_tested_run_timestamp_seconds')).toBe(before);
  }, 60_000);

  it.runIf(havePromtool)('follows the exposition format and naming conventions (promtool check metrics)', async () => {
    const check = spawnSync('promtool', ['check', 'metrics'], { input: await scrape(), encoding: 'utf8' });
    // One known complaint: promtool reads "bits" as a data size (base unit bytes), but the
    // min-entropy gauge counts bits of entropy per byte (or per bit), not stored data.
    const problems = (check.stdout + check.stderr)
      .split('\n')
      .filter((line) => line && line !== 'qentropy_quality_min_entropy_bits use base unit "bytes" instead of "bits"');
    expect(problems).toEqual([]);
  });

  it("docs/quality.md's alerting rules use only metrics the listener exports", async () => {
    const [rules] = docBlocks('quality.md', 'Metrics and alerts', 'yaml');
    const used = new Set(rules!.match(/\bqentropy_[a-z_]+/g));
    expect(used.size).toBeGreaterThanOrEqual(4);
    const exported = new Set([...(await scrape()).matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!));
    for (const name of used) expect(exported, name).toContain(name);
  });
});

describe.runIf(havePromtool)("docs/quality.md's alerting rules", () => {
  it('pass promtool check rules', () => {
    const [rules] = docBlocks('quality.md', 'Metrics and alerts', 'yaml');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-rules-'));
    try {
      const file = path.join(dir, 'qentropy-quality.rules.yml');
      fs.writeFileSync(file, rules!);
      const check = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
      expect(check.stdout + check.stderr).toContain('SUCCESS: 4 rules found');
      expect(check.status).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
