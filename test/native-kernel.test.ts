// The kernel sink against the real kernel: as root the ioctls succeed and the count is
// read back; as nobody (a child process dropped with setpriv/capsh) EPERM is reported
// with an explanation.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { isKernelSinkError, KernelRandom, kernelRelease, poolWakesWriters } from '../src/native/kernel.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const isRoot = process.getuid?.() === 0;

function which(cmd: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

describe('kernel sink', () => {
  it('reads the entropy count (no privilege needed)', () => {
    const dev = new KernelRandom();
    const count = dev.entropyCount();
    expect(count).toBeGreaterThanOrEqual(0);
    expect(count).toBeLessThanOrEqual(4096);
    if (!poolWakesWriters()) {
      // Linux >= 5.18: /proc and the ioctl agree on a fixed 256 once the CRNG is ready.
      expect(count).toBe(Number(fs.readFileSync('/proc/sys/kernel/random/entropy_avail', 'utf8').trim()));
    }
    dev.close();
  });

  it.skipIf(!isRoot)('as root: RNDADDENTROPY and RNDRESEEDCRNG succeed, RNDGETENTCNT reads back', () => {
    const dev = new KernelRandom();
    const before = dev.entropyCount();
    expect(dev.addEntropy(randomBytes(1024), 0)).toBe(0);
    expect(dev.addEntropy(randomBytes(64), 8)).toBe(512);
    dev.reseedCrng();
    const after = dev.entropyCount();
    expect(after === 256 || after >= before).toBe(true);
    dev.close();
  });

  it('validates the credit', () => {
    const dev = new KernelRandom();
    expect(() => dev.addEntropy(Buffer.alloc(4), 9)).toThrow(RangeError);
    expect(() => dev.addEntropy(Buffer.alloc(4), 1.5)).toThrow(RangeError);
    dev.close();
  });

  it('reports a path that is not a random device as ENOTTY', () => {
    const dev = new KernelRandom('/dev/null');
    let caught: unknown;
    try {
      dev.addEntropy(Buffer.alloc(8), 0);
    } catch (e) {
      caught = e;
    }
    expect(isKernelSinkError(caught)).toBe(true);
    expect(caught).toMatchObject({ code: 'ENOTTY', operation: 'RNDADDENTROPY on /dev/null' });
  });

  it('reports a missing device as ENOENT', () => {
    expect(() => new KernelRandom('/nonexistent/random')).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });

  it('knows the kernel release', () => {
    expect(kernelRelease()).toMatch(/^\d+\.\d+/);
  });

  const dropper = which('setpriv') ? 'setpriv' : which('capsh') ? 'capsh' : undefined;
  it.skipIf(!isRoot || !dropper)('as nobody: EPERM, explained (root, CAP_SYS_ADMIN, user namespaces)', () => {
    // The child loads the same addon the tests use and tries to add 8 bytes.
    const script = `
      const { createRequire } = require('node:module');
      const req = createRequire(${JSON.stringify(path.join(repoRoot, 'package.json'))});
      const p = process.env.QENTROPY_ADDON_PATH;
      const addon = p ? req(p) : req('node-gyp-build')(${JSON.stringify(repoRoot)});
      try {
        addon.kernelAddEntropy(addon.kernelOpen('/dev/random'), Buffer.alloc(8, 1), 8);
        console.log(JSON.stringify({ ok: true }));
      } catch (e) {
        console.log(JSON.stringify({ code: e.code, errno: e.errno, message: e.message }));
      }`;
    const args =
      dropper === 'setpriv'
        ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script]
        : ['capsh', '--user=nobody', '--', '-c', `${process.execPath} -e '${script.replace(/'/g, "'\\''")}'`];
    const r = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8', env: process.env, cwd: '/' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim()) as { code?: string; errno?: number; message?: string };
    expect(out.code).toBe('EPERM');
    expect(out.errno).toBe(1);
    expect(out.message).toMatch(/CAP_SYS_ADMIN/);
    expect(out.message).toMatch(/user namespace/);
  });
});
