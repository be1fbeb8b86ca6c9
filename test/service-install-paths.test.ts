// `qentropy service install` and who can change what the units run (issue 26 item 9):
// ExecStart= names a Node binary and a script that systemd starts as root (the feeder keeps
// CAP_SYS_ADMIN). When a non-root user could change either, or any directory above them,
// the install is refused with the paths and the fix, unless --allow-unsafe-path is given.
// We run as root here, so the test makes real files owned by, or writable for, uid 1000.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { planServiceInstall } from '../src/service/index.js';
import { cli } from './helpers/cli.js';

const isRoot = process.getuid?.() === 0;
const USER = 1000;

describe.runIf(isRoot)('service install refuses paths a non-root user can change', () => {
  // mkdtemp under /tmp: root's 0700 directory in a sticky, world-writable /tmp (safe).
  const top = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-exec-'));
  afterAll(() => fs.rmSync(top, { recursive: true, force: true }));

  /** A root-owned tree top/NAME/bin/{node,qentropy.js}, 0755 directories, 0755 files. */
  function tree(name: string): { dir: string; bin: string; node: string; script: string } {
    const dir = path.join(top, name);
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin, { recursive: true, mode: 0o755 });
    const node = path.join(bin, 'node');
    const script = path.join(bin, 'qentropy.js');
    for (const f of [node, script]) fs.writeFileSync(f, '#!/bin/sh\n', { mode: 0o755 });
    return { dir, bin, node, script };
  }

  it('plans the units when only root can change the binary, the script and their directories', async () => {
    const t = tree('safe');
    const plan = await planServiceInstall({ node: t.node, script: t.script, units: ['qentropy-feeder'] });
    expect(plan.unsafe).toEqual([]);
    expect(plan.execStart).toBe(`${t.node} ${t.script} daemon --config /etc/qentropy/qentropy.json`);
  });

  it("refuses a user's Node binary, a user's directory above the script, and a group- or world-writable directory, naming each", async () => {
    const cases: Array<[string, (t: ReturnType<typeof tree>) => void, (t: ReturnType<typeof tree>) => string]> = [
      ['user-node', (t) => fs.chownSync(t.node, USER, USER), (t) => `${t.node} is owned by uid ${USER}`],
      ['user-dir', (t) => fs.chownSync(t.dir, USER, USER), (t) => `${t.dir} is owned by uid ${USER}`],
      ['group-dir', (t) => (fs.chownSync(t.bin, 0, USER), fs.chmodSync(t.bin, 0o775)), (t) => `${t.bin} is writable by group ${USER}`],
      ['world-dir', (t) => fs.chmodSync(t.bin, 0o777), (t) => `${t.bin} is writable by every user`],
      ['user-script', (t) => fs.chownSync(t.script, USER, USER), (t) => `${t.script} is owned by uid ${USER}`],
    ];
    for (const [name, spoil, problem] of cases) {
      const t = tree(name);
      spoil(t);
      const refusal = planServiceInstall({ node: t.node, script: t.script });
      await expect(refusal, name).rejects.toThrow(problem(t));
      await expect(refusal, name).rejects.toThrow(/a non-root user could change the code the service runs .* or pass --allow-unsafe-path/);
    }
  });

  it('follows a symbolic link to the code it names', async () => {
    const t = tree('linked');
    fs.chownSync(t.dir, USER, USER);
    const safe = tree('link-home');
    const link = path.join(safe.bin, 'node-link');
    fs.symlinkSync(t.node, link);
    await expect(planServiceInstall({ node: link, script: safe.script })).rejects.toThrow(`${t.dir} is owned by uid ${USER}`);
  });

  it('installs anyway with allowUnsafePath, and lists what is unsafe', async () => {
    const t = tree('allowed');
    fs.chownSync(t.script, USER, USER);
    const plan = await planServiceInstall({ node: t.node, script: t.script, allowUnsafePath: true });
    expect(plan.unsafe).toEqual([`${t.script} is owned by uid ${USER}`]);
    expect(plan.execStart).toContain(t.script);
  });

  it('the command line takes --allow-unsafe-path', async () => {
    const run = await cli(['service', 'install', '--dry-run', '--allow-unsafe-path', '--unit', 'qentropy']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('ExecStart=');
  });
});
