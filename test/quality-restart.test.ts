// A run survives a restart in the middle: the quality role runs in a child process that is
// killed (SIGKILL) while its battery is running. Nothing half-written remains, and the next
// process runs and stores normally. Real storage (SQLite; PostgreSQL when configured).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { afterEach, expect, it } from 'vitest';

import { describeEachEngine } from './helpers/databases.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const viteNode = path.join(repoRoot, 'node_modules', 'vite-node', 'vite-node.mjs');
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

interface Child {
  process: ChildProcess;
  /** Resolves with the first event line matching `pred`. */
  waitFor(pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
}

function startChild(storageUrl: string, env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, [viteNode, path.join(repoRoot, 'test', 'quality-child.ts')], {
    cwd: repoRoot,
    env: { ...process.env, QENTROPY_STORAGE_URL: storageUrl, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines: Record<string, unknown>[] = [];
  const waiters: { pred: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] = [];
  readline.createInterface({ input: child.stdout! }).on('line', (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    lines.push(line);
    for (const w of [...waiters]) {
      if (w.pred(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  return {
    process: child,
    waitFor(pred, timeoutMs = 60_000) {
      const seen = lines.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('child did not report in time')), timeoutMs);
        child.once('exit', (code) => reject(new Error(`child exited (${code}) before reporting`)));
        waiters.push({ pred, resolve: (l) => (clearTimeout(timer), resolve(l)) });
      });
    },
  };
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once('exit', () => r()));

describeEachEngine('quality role across a restart', (engine) => {
  it('a run killed mid-battery leaves no record; the restarted role runs normally', async () => {
    await engine.reset();
    // 60 x 10^6 bits: the battery takes seconds, so the kill lands inside it.
    const first = startChild(engine.isolatedUrl, { QUALITY_STREAMS: '60', QUALITY_BITS: '1000000' });
    await first.waitFor((l) => l.event === 'listening');
    await first.waitFor((l) => l.event === 'drawn');
    await new Promise((r) => setTimeout(r, 500));
    first.process.kill('SIGKILL');
    await exited(first.process);

    const db = await engine.open();
    try {
      // Migrations committed at start; no run row, no data row.
      expect(await db.query('SELECT id FROM quality_runs')).toEqual([]);
      expect(await db.query('SELECT run_id FROM quality_run_data')).toEqual([]);

      // The next process: its first tick runs at start and stores a complete record.
      const second = startChild(engine.isolatedUrl, { QUALITY_STREAMS: '60', QUALITY_BITS: '100000' });
      const listening = (await second.waitFor((l) => l.event === 'listening')) as { url: string };
      await second.waitFor((l) => typeof l.msg === 'string' && /quality run (passed|failed)/.test(l.msg as string));
      const res = await fetch(`${listening.url}/api/v1/logs?num=100`);
      expect(res.status).toBe(200);
      const logs = (await res.json()) as { tests_passed: boolean }[];
      expect(logs).toHaveLength(1);
      const rows = await db.query<{ status: string }>('SELECT status FROM quality_runs');
      expect(rows.map((r) => r.status)).toEqual(['completed']);
      second.process.kill('SIGTERM');
      await exited(second.process);
      expect(second.process.exitCode).toBe(0);
    } finally {
      await db.close();
    }
  }, 120_000);
});
