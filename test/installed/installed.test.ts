// The packed tarball, installed the way users install it, on one Node line:
//   QENTROPY_TEST_NODE=/path/to/node   the Node to install and run with (default: this one)
//   QENTROPY_TEST_TARBALL=/path/x.tgz  the tarball (default: packed here from this checkout)
//   QENTROPY_TEST_PROJECT=1            also `npm install` into a fresh project, and there the
//                                      source-build fallback (a prebuild removed)
// `npm install -g` into a fresh prefix (and a project install), run by npm under that Node
// with no compiler on PATH (only node and sh): our prebuilt addon and better-sqlite3's
// Node-API binary from its npm package must be all it needs. Then from the installed
// copy: `qentropy version` (the prebuild, stamped with the package version), `qentropy sts`
// on NIST's data.e against NIST's P-values, the README's entropy-service quick start,
// `qentropy kme status`, and the one-line refusal when neither prebuild nor compiler exists.
// scripts/test-installed.sh runs this file once per Node line; see docs/install.md.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const vectors = path.resolve(repoRoot, '..', 'shared', 'vectors');
const node = process.env.QENTROPY_TEST_NODE || process.execPath;
const nodeBin = path.dirname(node);
const npmCli = path.join(path.dirname(fs.realpathSync(spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim())), 'npm-cli.js');
const nodeVersion = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
const pkgVersion = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const work = fs.mkdtempSync(path.join(os.tmpdir(), `qentropy-installed-${nodeVersion}-`));
const children: ChildProcess[] = [];

// Everything runs on the Node under test: npm and `#!/usr/bin/env node` scripts.
const env: Record<string, string> = { ...(process.env as Record<string, string>), PATH: `${nodeBin}:${process.env.PATH}` };
for (const k of Object.keys(env)) if (k.startsWith('npm_') && k !== 'npm_config_cache') delete env[k];

// A PATH as on a machine without build tools: only this Node and a shell (npm runs
// install scripts with sh). Whatever tried to compile would fail to find cmake, make or g++.
const bare = path.join(work, 'bare-bin');
fs.mkdirSync(bare);
fs.symlinkSync(node, path.join(bare, 'node'));
fs.symlinkSync('/bin/sh', path.join(bare, 'sh'));
const bareEnv: Record<string, string> = { ...env, PATH: bare };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

function run(file: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Run> {
  const start = Date.now();
  return new Promise((resolve) => {
    execFile(file, args, { cwd: options.cwd ?? work, env: options.env ?? env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr, ms: Date.now() - start });
    });
  });
}

const npm = (args: string[], cwd?: string, runEnv = env) => run(node, [npmCli, '--no-audit', '--no-fund', '--foreground-scripts', ...args], { cwd, env: runEnv });

async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function report(line: string): void {
  const file = process.env.QENTROPY_TEST_REPORT;
  if (file) fs.appendFileSync(file, `${line}\n`);
  console.log(line);
}

let tarball: string;
const prefix = path.join(work, 'prefix');
const project = path.join(work, 'project');
let qentropy: string;

beforeAll(async () => {
  tarball = process.env.QENTROPY_TEST_TARBALL ?? '';
  if (!tarball) {
    const packed = await run('npm', ['pack', '--silent', '--pack-destination', work], { cwd: repoRoot, env: process.env as Record<string, string> });
    expect(packed.code, packed.stderr).toBe(0);
    tarball = path.join(work, packed.stdout.trim().split('\n').at(-1)!);
  }
  fs.mkdirSync(prefix);
  for (const tool of ['cmake', 'make', 'g++', 'c++', 'cc']) expect(spawnSync('sh', ['-c', `command -v ${tool}`], { env: bareEnv }).status, tool).not.toBe(0);
  const global = await npm(['install', '-g', '--prefix', prefix, tarball], undefined, bareEnv);
  expect(global.code, global.stderr.slice(-4000)).toBe(0);
  expect(global.stdout).toMatch(/qentropy: using the prebuilt addon prebuilds\/linux-x64\/qentropy\.napi\.glibc\.node/);
  report(`node ${nodeVersion}: npm install -g (prebuilt addon, no compiler on PATH) ${(global.ms / 1000).toFixed(1)} s`);
  qentropy = path.join(prefix, 'bin', 'qentropy');
}, 900_000);

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  fs.rmSync(work, { recursive: true, force: true });
});

describe(`installed package on Node ${nodeVersion}`, () => {
  it('qentropy version: the prebuilt addon from the installed package, stamped with its version', async () => {
    const r = await run(qentropy, ['version', '--json']);
    expect(r.stderr).toBe('');
    const info = JSON.parse(r.stdout) as { package: string; packageRoot: string; node: string; addon: { version: string; file: string; kind: string } };
    const installed = path.join(prefix, 'lib', 'node_modules', 'qentropy');
    expect(info.package).toBe(pkgVersion);
    expect(info.node).toBe(nodeVersion);
    expect(info.packageRoot).toBe(installed);
    expect(info.addon).toEqual({ version: pkgVersion, kind: 'prebuild', file: path.join(installed, 'prebuilds', `linux-${process.arch}`, 'qentropy.napi.glibc.node') });
    const text = await run(qentropy, ['version']);
    expect(text.stdout).toContain(`prebuilt: ${info.addon.file}`);
    expect(fs.existsSync(path.join(installed, 'build'))).toBe(false); // nothing was compiled
    expect(fs.existsSync(path.join(installed, 'node_modules', 'better-sqlite3', 'build'))).toBe(false); // its prebuilt binary serves
  });

  it('qentropy sts on data.e gives NIST sts-2.1.2 P-values', async () => {
    const ref = JSON.parse(fs.readFileSync(path.join(vectors, 'reference-pvalues-e.json'), 'utf8')) as { tests: Record<string, (number | null)[]> };
    const r = await run(qentropy, ['sts', path.join(vectors, 'data.e'), '--format', 'ascii', '--json', '--threads', '2']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const got = (JSON.parse(r.stdout) as { sequences: { tests: Record<string, (number | null)[]> }[] }).sequences[0]!.tests;
    for (const [name, want] of Object.entries(ref.tests)) {
      want.forEach((w, i) => {
        if (w === null) expect(got[name]![i], `${name}[${i}]`).toBeNull();
        else expect(Math.abs(got[name]![i]! - w), `${name}[${i}]`).toBeLessThanOrEqual(1e-6 + 1e-12);
      });
    }
  });

  it("the README's entropy-service quick start works from the installed command", async () => {
    const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    const block = /## Quick start: an entropy service[\s\S]*?cat > qentropy\.json <<'JSON'\n([\s\S]*?)\nJSON\n([\s\S]*?)```/.exec(readme);
    expect(block, 'README quick start not found').toBeTruthy();
    const [entropyPort, qualityPort] = [await freePort(), await freePort()];
    // The README's config, with fresh ports and a state directory of this test's own.
    const config = JSON.parse(block![1]!) as { stateDir: string; entropy: { listen: { port: number } }; quality: Record<string, unknown> };
    expect(config.entropy.listen.port).toBe(8443);
    config.stateDir = path.join(work, 'state');
    config.entropy.listen.port = entropyPort;
    config.quality.listen = { host: '127.0.0.1', port: qualityPort };
    const configFile = path.join(work, 'qentropy.json');
    fs.writeFileSync(configFile, JSON.stringify(config));
    expect(block![2]).toContain('npx qentropy token create --config qentropy.json --account alice --allotment 1048576 --period month');

    const token = await run(qentropy, ['token', 'create', '--config', configFile, '--account', 'alice', '--allotment', '1048576', '--period', 'month']);
    expect(token.code, token.stderr).toBe(0);
    expect(token.stderr).toContain('account alice (new): allotment 1048576 bytes per month');
    const secret = token.stdout.trim().split(/\s+/)[0]!;
    expect(secret).toMatch(/^qe_/);

    const daemon = spawn(qentropy, ['daemon', '--config', configFile], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(daemon);
    let logs = '';
    daemon.stdout!.on('data', (d: Buffer) => (logs += d.toString()));
    daemon.stderr!.on('data', (d: Buffer) => (logs += d.toString()));
    const base = `http://127.0.0.1:${entropyPort}`;
    const body = await waitFor('the entropy API', async () => {
      const res = await fetch(`${base}/api/v1/quantum-entropy?size=2`, { headers: { authorization: `Bearer ${secret}` } });
      return res.status === 200 ? ((await res.json()) as { data?: unknown }) : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${logs}`);
    });
    expect(JSON.stringify(body)).toMatch(/[A-Za-z0-9+/=]{1300,}/); // two 1,024-byte blocks in base64

    const fetched = await run(qentropy, ['fetch', '--url', base, '--bytes', '32', '--format', 'hex'], { env: { ...env, QENTROPY_TOKEN: secret } });
    expect(fetched.stderr).toBe('');
    expect(fetched.stdout.trim()).toMatch(/^[0-9a-f]{64}$/);

    const logsApi = await waitFor(
      'the first quality run',
      async () => {
        const res = await fetch(`http://127.0.0.1:${qualityPort}/api/v1/logs?num=1`);
        const json = (await res.json()) as unknown[] | { logs?: unknown[] };
        const list = Array.isArray(json) ? json : (json.logs ?? []);
        return res.status === 200 && list.length > 0 ? list : undefined;
      },
      120_000,
    );
    expect(logsApi.length).toBe(1);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('qentropy_');
    daemon.kill('SIGTERM');
    await new Promise((r) => daemon.once('exit', r));
    expect(daemon.exitCode).toBe(0);
  }, 180_000);

  it('qentropy kme status answers over mutual TLS from an installed KME site', async () => {
    const pki = path.join(work, 'pki');
    const issue = async (args: string[]) => {
      const r = await run(qentropy, ['pki', ...args, '--dir', pki]);
      expect(r.code, r.stderr).toBe(0);
    };
    await issue(['init']);
    await issue(['issue', '--kme', 'A', '--host', '127.0.0.1']);
    await issue(['issue', '--sae', 'alice', '--site', 'A']);
    await issue(['issue', '--sae', 'bob', '--site', 'B']);
    const [portA, portB] = [await freePort(), await freePort()];
    const config = path.join(pki, 'a.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        stateDir: pki,
        storage: { url: `sqlite:${path.join(pki, 'a.db')}` },
        kme: {
          id: 'A',
          listen: { host: '127.0.0.1', port: portA },
          tls: { cert: path.join(pki, 'kme-A.crt'), key: path.join(pki, 'kme-A.key'), ca: path.join(pki, 'ca.crt') },
          siteKeyFile: path.join(pki, 'a.sitekey'),
          seedSource: 'system',
          peers: { B: { url: `https://127.0.0.1:${portB}` } },
          saes: { bob: 'B' },
        },
      }),
    );
    const daemon = spawn(qentropy, ['daemon', '--config', config], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(daemon);
    let logs = '';
    daemon.stdout!.on('data', (d: Buffer) => (logs += d.toString()));
    daemon.stderr!.on('data', (d: Buffer) => (logs += d.toString()));
    const args = ['kme', 'status', 'bob', '--url', `https://127.0.0.1:${portA}`, '--cert', path.join(pki, 'sae-alice.crt'), '--key', path.join(pki, 'sae-alice.key'), '--ca', path.join(pki, 'ca.crt')];
    const status = await waitFor('kme status', async () => {
      const r = await run(qentropy, args);
      return r.code === 0 ? r : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${logs}`);
    });
    const json = JSON.parse(status.stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ source_KME_ID: 'A', target_KME_ID: 'B', master_SAE_ID: 'alice', slave_SAE_ID: 'bob' });
    daemon.kill('SIGTERM');
    await new Promise((r) => daemon.once('exit', r));
  }, 120_000);

  it('without a prebuild and without a compiler, the install stops with one line naming what to install', async () => {
    const copy = path.join(work, 'no-prebuild');
    fs.cpSync(path.join(prefix, 'lib', 'node_modules', 'qentropy'), copy, { recursive: true, verbatimSymlinks: true });
    fs.rmSync(path.join(copy, 'prebuilds'), { recursive: true });
    // PATH with only this Node and sh: no cmake, no make, no g++.
    const r = await run(path.join(bare, 'node'), [path.join(copy, 'scripts', 'install-native.cjs')], { cwd: copy, env: { PATH: bare, HOME: work } });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(`qentropy: no prebuilt addon for linux-${process.arch} and no C++ toolchain to build one: install cmake, make, g++ (Debian/Ubuntu: apt-get install cmake g++ make)`);
  });

  // Defined only where asked for (one Node line in CI): each takes minutes, and what they
  // add over the global install does not depend on the Node line.
  if (process.env.QENTROPY_TEST_PROJECT === '1') {
    describe('in a fresh project', () => {
      it('installs into a fresh project too, and runs from node_modules/.bin', async () => {
        fs.mkdirSync(project);
        fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'a-user-project', version: '1.0.0', private: true }));
        const r = await npm(['install', tarball], project);
        expect(r.code, r.stderr.slice(-4000)).toBe(0);
        report(`node ${nodeVersion}: npm install ./qentropy-${pkgVersion}.tgz in a project (prebuild) ${(r.ms / 1000).toFixed(1)} s`);
        const v = await run(path.join(project, 'node_modules', '.bin', 'qentropy'), ['version', '--json'], { cwd: project });
        const info = JSON.parse(v.stdout) as { addon: { kind: string; file: string; version: string } };
        expect(info.addon.kind).toBe('prebuild');
        expect(info.addon.version).toBe(pkgVersion);
        expect(info.addon.file.startsWith(path.join(project, 'node_modules', 'qentropy', 'prebuilds'))).toBe(true);
      }, 900_000);

      it('without a fitting prebuild, the install builds the addon from source and says so', async () => {
        const installed = path.join(project, 'node_modules', 'qentropy');
        fs.rmSync(path.join(installed, 'prebuilds'), { recursive: true });
        const r = await npm(['rebuild', 'qentropy'], project);
        expect(r.code, r.stderr.slice(-4000)).toBe(0);
        expect(r.stdout).toContain(`qentropy: no prebuilt addon for linux-${process.arch}: building the addon from source with cmake-js`);
        report(`node ${nodeVersion}: addon source build (npm rebuild qentropy, no prebuild) ${(r.ms / 1000).toFixed(1)} s`);
        const v = await run(path.join(project, 'node_modules', '.bin', 'qentropy'), ['version', '--json'], { cwd: project });
        const info = JSON.parse(v.stdout) as { addon: { kind: string; file: string; version: string } };
        expect(info.addon).toEqual({ kind: 'source', version: pkgVersion, file: path.join(installed, 'build', 'Release', 'qentropy.node') });
      }, 600_000);
    });
  }
});
