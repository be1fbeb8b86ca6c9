// Issue 27, item 1: README's quick start (entropy + quality in one daemon) with no client
// drawing entropy. Quality draws leave the shared pool at exactly its low-water mark, and
// before the fix the filler never woke again: run after run became "source pool did not
// deliver ..." or hung. Here 20 consecutive scheduled runs must all be tested. Runs are
// small (55 x 100,000 bits, 687,500 bytes) so that CI can afford twenty, yet the pool's
// 8 MiB above low water is used up after 12 of them.
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { resolveConfig } from '../src/config/index.js';
import { buildRoles, runRoles, type EntropyRole, type QualityRole } from '../src/roles/index.js';
import { repoRoot } from './helpers/package.js';

const RUNS = 20;
const LAYOUT = { streams: 55, bitsPerStream: 100_000 };

/** The config of README.md's "Quick start: an entropy service with its quality APIs", as written. */
function readmeQuickStartConfig(): Record<string, Record<string, unknown>> {
  const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start: an entropy service with its quality APIs'));
  const json = /cat > qentropy\.json <<'JSON'\n([\s\S]*?)\nJSON/.exec(section);
  if (!json) throw new Error("README.md's quality quick start has no qentropy.json block");
  return JSON.parse(json[1]!) as Record<string, Record<string, unknown>>;
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-soak-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('quality runs on the quick-start config with no client traffic', () => {
  it(`gives ${RUNS} tested runs in a row: a draw the pool cannot meet wakes the filler`, async () => {
    const quickStart = readmeQuickStartConfig();
    expect(quickStart.entropy).toMatchObject({ enabled: true, source: 'getrandom' });
    expect(quickStart.quality).toMatchObject({ enabled: true });
    // What the test changes: a scratch state directory, free ports, and small, frequent runs.
    const config = resolveConfig({
      ...quickStart,
      stateDir: dir,
      entropy: { ...quickStart.entropy, listen: { host: '127.0.0.1', port: 0 } },
      quality: { ...quickStart.quality, listen: { host: '127.0.0.1', port: 0 }, intervalSeconds: 1, drawTimeoutSeconds: 30, ...LAYOUT },
    });

    // Each run's outcome arrives as a log line; the test waits on those lines.
    const outcomes: Array<{ msg: string; run?: number; error?: string }> = [];
    let onOutcome: () => void = () => {};
    const stream = {
      write(line: string) {
        const entry = JSON.parse(line) as { msg: string; run?: number; error?: string };
        if (entry.msg.startsWith('quality run') && entry.run !== undefined && !entry.msg.includes('identical')) {
          outcomes.push(entry);
          onOutcome();
        }
      },
    };
    const logger = pino({ level: 'info' }, stream);
    const roles = await buildRoles(config, { logger, stateDir: dir, shared: {} });
    expect(roles.map((r) => r.name)).toEqual(['entropy', 'quality']);
    const signals = new EventEmitter();
    const running = runRoles(roles, logger, { signals });
    try {
      // Until 20 outcomes are in, or the first error run (which is the defect).
      await new Promise<void>((resolve) => {
        onOutcome = () => {
          if (outcomes.length >= RUNS || outcomes.some((o) => o.error !== undefined)) resolve();
        };
        onOutcome();
      });
      expect(outcomes.filter((o) => o.error !== undefined)).toEqual([]);
      expect(outcomes.length).toBeGreaterThanOrEqual(RUNS);
      const pool = (roles[0] as EntropyRole).pool!.stats();
      expect(pool.bytesToClients).toBe(0);
      expect(pool.bytesToQuality).toBeGreaterThanOrEqual((RUNS * LAYOUT.streams * LAYOUT.bitsPerStream) / 8);
      // More than the pool ever held above its low-water mark: the filler did refill it.
      expect(pool.bytesToQuality).toBeGreaterThan(pool.capacity - pool.lowWater);
      // The source reads as `qentropy quality run` writes it (issue 27 item 12).
      const quality = roles[1] as QualityRole;
      const report = (await (await fetch(`${quality.address!.url}/api/v1/runs/${outcomes[0]!.run}`)).json()) as { source: string };
      expect(report.source).toBe('pool (getrandom)');
    } finally {
      signals.emit('SIGTERM');
      await running;
    }
  }, 600_000);
});
