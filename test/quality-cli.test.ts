// `qentropy quality run` as a user meets it when something is wrong (issue 27): an entropy
// API that does not answer is named at once, and the run's final error says why.
// The spawned CLI is bin/qentropy.js over dist/ (`npx tsc -p tsconfig.build.json`).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cli } from './helpers/cli.js';
import { freePort } from './helpers/net.js';
import { repoRoot } from './helpers/package.js';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-quality-cli-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function writeConfig(name: string, quality: Record<string, unknown>): string {
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ stateDir: dir, storage: { url: `sqlite:${path.join(dir, `${name}.db`)}` }, quality }));
  return file;
}

describe('quality run --url to an entropy API that is down', () => {
  it('says "connection refused" at once, not after the draw timeout (300 s)', async () => {
    const port = await freePort();
    const config = writeConfig('dead-default', {});
    const child = spawn(
      process.execPath,
      [path.join(repoRoot, 'bin', 'qentropy.js'), 'quality', 'run', '--config', config, '--url', `http://127.0.0.1:${port}`, '--streams', '1', '--bits', '1000'],
      { env: { ...process.env, QENTROPY_TOKEN: 'qe_test' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // The line arrives while the run still waits on its 300 s draw timeout; then Ctrl-C.
    await new Promise<void>((resolve) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        if (stderr.includes('\n')) resolve();
      });
      void exited.then(() => resolve());
    });
    expect(child.exitCode).toBeNull();
    expect(stderr).toMatch(new RegExp(`^qentropy: entropy API: request to http://127\\.0\\.0\\.1:${port} failed: .*ECONNREFUSED.*; retrying for up to 300 s \\(quality\\.drawTimeoutSeconds\\)\\n$`));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('qentropy: interrupted; nothing was stored\n');
  }, 60_000);

  it('names the cause in the final error once the draw times out', async () => {
    const port = await freePort();
    const config = writeConfig('dead-short', { drawTimeoutSeconds: 1 });
    process.env.QENTROPY_TOKEN = 'qe_test';
    let result;
    try {
      result = await cli(['quality', 'run', '--config', config, '--url', `http://127.0.0.1:${port}`, '--streams', '1', '--bits', '1000']);
    } finally {
      delete process.env.QENTROPY_TOKEN;
    }
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    // Not a TTY: the first failure only, then the final error.
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/ECONNREFUSED/);
    expect(lines[1]).toMatch(
      new RegExp(`^qentropy: run \\d+ failed: source entropy-api http://127\\.0\\.0\\.1:${port} did not deliver 125 bytes within 1 s; last failure: request to .*ECONNREFUSED`),
    );
  }, 60_000);
});

describe('quality run from a local source', () => {
  it('names the source as the daemon does: "pool (getrandom)"', async () => {
    const config = writeConfig('local', {});
    const result = await cli(['quality', 'run', '--config', config, '--source', 'getrandom', '--streams', '1', '--bits', '1000', '--json']);
    expect(result.code, result.stderr).not.toBe(1);
    expect((JSON.parse(result.stdout) as { source: string }).source).toBe('pool (getrandom)');
  }, 60_000);
});
