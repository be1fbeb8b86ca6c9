// docs/kme.md as a new user meets it: the three-site walk-through run as written (bash,
// the qentropy CLI on PATH, curl and jq, three daemons as their own processes), and the
// example configuration of a KME-only site written verbatim and started as a daemon.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { docBlocks } from './helpers/docs.js';
import { createTestPackage, type TestPackage } from './helpers/package.js';
import { freePort } from './helpers/net.js';

const run = promisify(execFile);

let pkg: TestPackage;
let bin: string;
const groups: ChildProcess[] = [];

beforeAll(() => {
  pkg = createTestPackage('kme-docs');
  bin = path.join(pkg.dir, 'bin');
  fs.mkdirSync(bin);
  // `qentropy` as an installed package provides it: the CLI of this tree.
  fs.writeFileSync(path.join(bin, 'qentropy'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(pkg.cli)} "$@"\n`, { mode: 0o755 });
}, 60_000);

afterAll(() => {
  for (const child of groups) {
    try {
      process.kill(-child.pid!, 'SIGKILL'); // the shell and every daemon it started
    } catch {
      /* already gone */
    }
  }
  pkg?.remove();
});

/** Starts `command args` in its own process group; resolves with its output when it exits. */
function start(command: string, args: string[], options: { cwd: string; env: Record<string, string> }) {
  const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  groups.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, exited, output: () => ({ stdout, stderr }) };
}

describe('docs/kme.md', () => {
  it('the three-site walk-through runs as written: one PSK per link, SAE IDs in paths, keys identical at both ends of every link', async () => {
    const script = docBlocks('kme.md', 'Three-site walk-through', 'sh').join('\n');
    const work = path.join(pkg.dir, 'three-sites');
    fs.mkdirSync(work);
    const ports = { A_PORT: String(await freePort()), B_PORT: String(await freePort()), C_PORT: String(await freePort()) };
    const shell = start('bash', ['-e', '-c', script], { cwd: work, env: { ...ports, PATH: `${bin}:${process.env.PATH}` } });
    const timer = setTimeout(() => process.kill(-shell.child.pid!, 'SIGKILL'), 150_000);
    const result = await shell.exited;
    clearTimeout(timer);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('the same keys at both ends of every link');

    const read = (f: string) => JSON.parse(fs.readFileSync(path.join(work, f), 'utf8')) as { keys: Array<{ key_ID: string; key: string }> };
    expect(read('alice-bob.json').keys).toHaveLength(2);
    expect(read('bob-from-alice.json').keys).toEqual(read('alice-bob.json').keys.slice(0, 1));
    expect(read('carol-from-alice.json').keys).toEqual(read('alice-carol.json').keys);
    for (const k of read('alice-carol.json').keys) expect(Buffer.from(k.key, 'base64')).toHaveLength(64);
    expect(read('carol-from-bob.json').keys).toEqual(read('bob-carol.json').keys);
    // One PSK per link, 0600, and each site's config names the two of its own links.
    for (const link of ['A-B', 'A-C', 'B-C']) expect(fs.statSync(path.join(work, 'cluster', `psk-${link}`)).mode & 0o777).toBe(0o600);
    const peersOf = (f: string) => JSON.parse(fs.readFileSync(path.join(work, 'cluster', f), 'utf8')).kme.peers as Record<string, { pskFile: string }>;
    expect(Object.fromEntries(Object.entries(peersOf('c.json')).map(([p, v]) => [p, v.pskFile]))).toEqual({ A: 'psk-A-C', B: 'psk-B-C' });
  }, 180_000);

  it('the example configuration of a KME-only site starts as written, with no entropy role in the daemon', async () => {
    const [example] = docBlocks('kme.md', 'Configuration', 'json');
    const work = path.join(pkg.dir, 'standalone');
    const etc = path.join(work, 'etc');
    const state = path.join(work, 'state');
    fs.mkdirSync(etc, { recursive: true });
    fs.mkdirSync(state);
    fs.writeFileSync(path.join(etc, 'qentropy.json'), example!);
    const qentropy = (...args: string[]) => run(path.join(bin, 'qentropy'), args);
    const pki = path.join(etc, 'pki');
    await qentropy('pki', 'init', '--dir', pki);
    await qentropy('pki', 'issue', '--dir', pki, '--kme', 'A', '--host', '127.0.0.1');
    await qentropy('pki', 'issue', '--dir', pki, '--sae', 'alice', '--site', 'A');
    fs.writeFileSync(path.join(etc, 'psk-A-B'), Buffer.alloc(32, 9), { mode: 0o600 });

    // Only what differs on a test machine comes from the environment: where state lives and a free port.
    const daemon = start(path.join(bin, 'qentropy'), ['daemon', '--config', path.join(etc, 'qentropy.json')], {
      cwd: work,
      env: { QENTROPY_STATE_DIR: state, QENTROPY_KME_LISTEN_HOST: '127.0.0.1', QENTROPY_KME_LISTEN_PORT: '0' },
    });
    let url: string | undefined;
    const until = Date.now() + 60_000;
    while (!url && Date.now() < until) {
      const exited = await Promise.race([daemon.exited, new Promise((r) => setTimeout(() => r(undefined), 100))]);
      if (exited) throw new Error(`daemon exited: ${JSON.stringify(exited)}`);
      const line = daemon.output().stdout.split('\n').find((l) => l.includes('kme: listening'));
      if (line) url = (JSON.parse(line) as { url: string }).url;
    }
    expect(url, daemon.output().stderr).toBeDefined();
    const { stdout } = await run('curl', [
      '-sS', '--fail-with-body', '--cert', path.join(pki, 'sae-alice.crt'), '--key', path.join(pki, 'sae-alice.key'), '--cacert', path.join(pki, 'ca.crt'),
      `${url}/api/v1/keys/bob/status`,
    ]);
    expect(JSON.parse(stdout)).toMatchObject({ source_KME_ID: 'A', target_KME_ID: 'B', master_SAE_ID: 'alice', slave_SAE_ID: 'bob', stored_key_count: 100_000 });
    expect(fs.statSync(path.join(state, 'kme-site.key')).mode & 0o777).toBe(0o600);
    daemon.child.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
  }, 120_000);
});
