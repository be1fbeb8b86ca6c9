// docs/daemon.md, "From npm install -g to a feeding service", run as far as a machine
// without systemd as PID 1 allows: `qentropy service install` (dry run, then for real) into
// a scratch root, systemd-sysusers and systemd-tmpfiles --create on that root, verify and
// security on the unit as written, the walk-through's config with a REAL local entropy API
// as the provider, the daemon started with the unit's own ExecStart= command line as the
// unit's user with the unit's one capability (setpriv), and `qentropy feeder status`.
// The CLI is bundled from src/ (test/helpers/package.ts); installing the tarball itself is
// covered by test/installed/installed.test.ts. Paths of the walk-through move under the
// scratch root, which is the one change made to its commands and config.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Upstream } from './feeder-harness.js';
import { createTestPackage, repoRoot, runNode, type TestPackage } from './helpers/package.js';

const isRoot = process.getuid?.() === 0;
const doc = fs.readFileSync(path.join(repoRoot, 'docs', 'daemon.md'), 'utf8');
const section = doc.slice(doc.indexOf('## From `npm install -g` to a feeding service'));
const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
const commands = block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim());
const docConfig = /cat > \/etc\/qentropy\/qentropy\.json <<'JSON'\n([\s\S]*?)\nJSON/.exec(block)![1]!;

let pkg: TestPackage;
let upstream: Upstream;
let root: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  pkg = createTestPackage('walkthrough');
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-root-'));
  fs.chmodSync(root, 0o755); // as / is: the service user walks through it
  upstream = await Upstream.create(4 * 1024 * 1024);
  upstream.pool.put(crypto.randomBytes(2 * 1024 * 1024)); // the provider's supply
  await upstream.start();
}, 60_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await upstream?.close();
  pkg?.remove();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

function sh(command: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const under = (p: string) => path.join(root, p);
const mode = (p: string) => (fs.statSync(p).mode & 0o777).toString(8);

describe.runIf(isRoot)('docs/daemon.md walk-through', () => {
  it('runs from service install to a feeding daemon', async () => {
    const unitPath = '/etc/systemd/system/qentropy-feeder.service';
    const config = under('/etc/qentropy/qentropy.json');
    for (const c of [
      'npm install -g qentropy',
      'qentropy version',
      'qentropy service install --unit qentropy-feeder --dry-run',
      'qentropy service install --unit qentropy-feeder',
      'systemd-sysusers',
      'systemd-tmpfiles --create',
      `systemd-analyze verify ${unitPath}`,
      'systemctl enable --now qentropy-feeder.service',
      'qentropy feeder status --config /etc/qentropy/qentropy.json',
    ]) {
      expect(commands, `docs/daemon.md no longer says: ${c}`).toContain(c);
    }

    // qentropy version
    const version = await runNode(pkg.cli, ['version']);
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout).toMatch(/^addon +\S+, (built from source|prebuilt): \S+qentropy\S*\.node$/m);

    // service install --dry-run: prints, writes nothing
    const dry = await runNode(pkg.cli, ['service', 'install', '--unit', 'qentropy-feeder', '--dry-run', '--root', root, '--config', config]);
    expect(dry.code, dry.stderr).toBe(0);
    const script = fs.realpathSync(pkg.cli);
    const execStart = `ExecStart=${process.execPath} ${script} daemon --config ${config}`;
    expect(dry.stdout).toContain(`# ${unitPath} (mode 0644)`);
    expect(dry.stdout).toContain(execStart);
    expect(dry.stdout).toContain('# /etc/tmpfiles.d/qentropy.conf (mode 0644)');
    expect(fs.readdirSync(root)).toEqual([]);

    // service install
    const install = await runNode(pkg.cli, ['service', 'install', '--unit', 'qentropy-feeder', '--root', root, '--config', config]);
    expect(install.code, install.stderr).toBe(0);
    const unit = fs.readFileSync(under(unitPath), 'utf8');
    expect(unit.split('\n').filter((l) => l.startsWith('ExecStart='))).toEqual([execStart]);
    expect(fs.existsSync(under('/etc/systemd/system/qentropy.service'))).toBe(false);
    expect(mode(under(unitPath))).toBe('644');

    // systemd-sysusers: the service user
    const sysusers = sh('systemd-sysusers', [`--root=${root}`]);
    expect(sysusers.status, sysusers.stderr).toBe(0);
    const passwd = fs.readFileSync(under('/etc/passwd'), 'utf8');
    const entry = /^qentropy:x:(\d+):(\d+):[^:]*:\/var\/lib\/qentropy:/m.exec(passwd);
    expect(entry, passwd).toBeTruthy();
    const [uid, gid] = [Number(entry![1]), Number(entry![2])];

    // systemd-tmpfiles --create: the directories, 0700, the service user's
    fs.mkdirSync(under('/var/lib'), { recursive: true });
    const tmpfiles = () => sh('systemd-tmpfiles', [`--root=${root}`, '--create']);
    let t = tmpfiles();
    expect(t.status, t.stderr).toBe(0);
    for (const dir of ['/var/lib/qentropy', '/etc/qentropy']) {
      expect(mode(under(dir)), dir).toBe('700');
      expect(fs.statSync(under(dir)).uid, dir).toBe(uid);
    }

    // systemd-analyze verify and security on the unit as written (its ExecStart exists)
    const verify = sh('systemd-analyze', ['verify', under(unitPath)]);
    expect(verify.stderr).toBe('');
    expect(verify.status).toBe(0);
    const security = sh('systemd-analyze', ['security', '--offline=yes', under(unitPath)]);
    const exposure = Number(/Overall exposure level for \S+: ([0-9.]+)/.exec(security.stdout + security.stderr)?.[1]);
    expect(exposure).toBeLessThanOrEqual(2.5);

    // The token and the walk-through's config, pointed at the local provider
    const token = await upstream.token();
    fs.writeFileSync(under('/etc/qentropy/feeder.token'), `${token}\n`);
    const cfg = JSON.parse(docConfig.replaceAll('/etc/qentropy/', `${under('/etc/qentropy')}/`)) as {
      stateDir?: string;
      feeder: { sources: Array<{ url: string; caFile?: string }>; status?: unknown };
    };
    expect(cfg.feeder.sources[0]!.url).toBe('https://entropy.example.net');
    cfg.feeder.sources[0]!.url = upstream.url;
    cfg.feeder.sources[0]!.caFile = under('/etc/qentropy/ca.pem');
    fs.writeFileSync(cfg.feeder.sources[0]!.caFile, upstream.caPem);
    cfg.stateDir = under('/var/lib/qentropy');
    cfg.feeder.status = { file: under('/var/lib/qentropy/feeder-status.json'), intervalMs: 200, listen: false };
    fs.writeFileSync(config, JSON.stringify(cfg, null, 2));
    t = tmpfiles();
    expect(t.status, t.stderr).toBe(0);
    for (const f of ['qentropy.json', 'feeder.token', 'ca.pem']) {
      expect(mode(under(`/etc/qentropy/${f}`)), f).toBe('600');
      expect(fs.statSync(under(`/etc/qentropy/${f}`)).uid, f).toBe(uid);
    }

    // "systemctl enable --now": the unit's ExecStart= as its User= with its one capability
    const argv = execStart.slice('ExecStart='.length).split(' ');
    const child = spawn(
      'setpriv',
      [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--inh-caps=+sys_admin', '--ambient-caps=+sys_admin', ...argv],
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' },
    );
    children.push(child);
    let logs = '';
    child.stdout!.on('data', (d: Buffer) => (logs += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (logs += d.toString()));

    // qentropy feeder status: 0 once the kernel sink has been fed
    const end = Date.now() + 30_000;
    let status = await runNode(pkg.cli, ['feeder', 'status', '--config', config]);
    while ((status.code !== 0 || !/sink kernel: ok, [1-9]/.test(status.stdout)) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 250));
      status = await runNode(pkg.cli, ['feeder', 'status', '--config', config]);
    }
    expect(status.code, `${status.stdout}${status.stderr}\n${logs}`).toBe(0);
    expect(status.stdout).toMatch(/^feeder: running/m);
    expect(status.stdout).toMatch(/sink kernel: ok, [1-9]\d* feeds/);

    child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code, logs).toBe(0);
  }, 120_000);
});
