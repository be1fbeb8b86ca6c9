// `qentropy daemon` with the feeder role as its own process, as systemd runs it: the CLI is
// bundled from src/ into a directory laid out like the package (test/helpers/package.ts). A
// REAL local entropy server feeds it. Checked: readiness and watchdog over a fake
// $NOTIFY_SOCKET, SIGHUP reload, SIGTERM mid-feed leaves no partial write and exits
// within 5 s, `qentropy feeder status`, precise config errors, and as nobody the kernel
// sink reports EPERM clearly while the file sink goes on.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { FeederStatus } from '../src/feeder/index.js';
import { Upstream, waitFor } from './feeder-harness.js';
import { createTestPackage, repoRoot, srcPath, type TestPackage } from './helpers/package.js';
import { haveSofthsm, initSofthsmToken, softhsmModule } from './helpers/softhsm.js';
import { scaled } from './helpers/time.js';

const isRoot = process.getuid?.() === 0;
const havePython = spawnSync('sh', ['-c', 'command -v python3']).status === 0;
const haveSetpriv = spawnSync('sh', ['-c', 'command -v setpriv']).status === 0;
let pkg: TestPackage;
let dir: string;
let cli: string;
let upstream: Upstream;
const children: ChildProcess[] = [];

beforeAll(async () => {
  pkg = createTestPackage('feeder-daemon');
  dir = pkg.dir;
  cli = pkg.cli;
  upstream = await Upstream.create(8 * 1024 * 1024);
  await upstream.start();
}, 60_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await upstream?.close();
  pkg?.remove();
});

interface Daemon {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; at: number }>;
}

function startDaemon(args: string[], options: { env?: Record<string, string>; asNobody?: boolean } = {}): Daemon {
  const argv = [process.execPath, cli, ...args];
  const command = options.asNobody ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', ...argv] : argv;
  const child = spawn(command[0]!, command.slice(1), { env: { ...process.env, ...options.env }, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.on('exit', (code) => resolve({ code, at: Date.now() })));
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function writeConfig(name: string, feeder: Record<string, unknown>, owner?: number): Promise<{ config: string; statusFile: string }> {
  const sub = path.join(dir, name);
  fs.mkdirSync(sub, { recursive: true, mode: 0o755 });
  const tokenFile = path.join(sub, 'token');
  fs.writeFileSync(tokenFile, `${await upstream.token()}\n`, { mode: 0o600 });
  const caFile = path.join(sub, 'ca.pem');
  fs.writeFileSync(caFile, upstream.caPem, { mode: 0o644 });
  const statusFile = path.join(sub, 'feeder-status.json');
  const config = path.join(sub, 'qentropy.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      stateDir: sub,
      feeder: {
        enabled: true,
        sources: [{ url: upstream.url, tokenFile, caFile, blocksPerRequest: 256 }],
        status: { file: statusFile, intervalMs: 200, listen: { host: '127.0.0.1', port: 0 } },
        ...feeder,
      },
    }),
  );
  if (owner !== undefined) for (const f of [sub, tokenFile, caFile, config]) fs.chownSync(f, owner, owner);
  return { config, statusFile };
}

function readStatus(file: string): FeederStatus | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as FeederStatus;
  } catch {
    return undefined;
  }
}

/** A unix datagram socket standing in for systemd's $NOTIFY_SOCKET (Node cannot bind one). */
function fakeNotifySocket(socketPath: string): { messages: () => string[]; ready: Promise<void>; stop: () => void } {
  const py = spawn('python3', ['-c', `
import socket, sys, json
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("bound", flush=True)
while True:
    print(json.dumps(s.recv(4096).decode()), flush=True)
`, socketPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(py);
  let out = '';
  const ready = new Promise<void>((resolve) =>
    py.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.startsWith('bound')) resolve();
    }),
  );
  return {
    ready,
    messages: () => out.split('\n').slice(1).filter(Boolean).map((l) => JSON.parse(l) as string),
    stop: () => py.kill('SIGTERM'),
  };
}

function fillUpstream(bytes: number): void {
  upstream.pool.clear();
  upstream.pool.put(crypto.randomBytes(bytes));
}

describe('qentropy daemon with the feeder role (separate process)', () => {
  it('rejects a bad feeder config at start, naming each key', async () => {
    const config = path.join(dir, 'bad.json');
    fs.writeFileSync(config, JSON.stringify({ feeder: { enabled: true, kernel: { creditBitsPerByte: 9 }, pkcs11: [{ tokenLabel: 'x', pin: '1234' }] } }));
    const d = startDaemon(['daemon', '--config', config]);
    const { code } = await d.exited;
    expect(code).toBe(2);
    const err = d.stderr();
    expect(err).toMatch(/feeder\.sources: needs at least one entropy API/);
    expect(err).toMatch(/feeder\.kernel\.creditBitsPerByte: expected an integer 0\.\.8, got 9/);
    expect(err).toMatch(/feeder\.pkcs11\.0\.module: is required/);
    expect(err).toMatch(/feeder\.pkcs11\.0\.pin: put the PIN in a file/);
    expect(err).not.toContain('1234');
    expect(err.trim().split('\n')).toHaveLength(1);
  });

  it.skipIf(!havePython)('notifies readiness and the watchdog, reloads on SIGHUP, and SIGTERM mid-feed leaves no partial write', async () => {
    fillUpstream(8 * 1024 * 1024);
    const fileA = path.join(dir, 'main', 'a.bin');
    const fileB = path.join(dir, 'main', 'b.bin');
    const sink = { bytes: 65536, intervalMs: 0 };
    const { config, statusFile } = await writeConfig('main', { kernel: { enabled: false }, buffer: { capacityBytes: 1024 * 1024 }, files: [{ path: fileA, ...sink }] });
    const notify = fakeNotifySocket(path.join(dir, 'notify.sock'));
    await notify.ready;
    const d = startDaemon(['daemon', '--config', config], { env: { NOTIFY_SOCKET: path.join(dir, 'notify.sock'), WATCHDOG_USEC: '300000' } });
    await waitFor(() => notify.messages().some((m) => m.startsWith('READY=1')), 15_000, 'READY=1');
    await waitFor(() => notify.messages().includes('WATCHDOG=1'), 5_000, 'WATCHDOG=1');
    await waitFor(() => fs.existsSync(fileA) && fs.statSync(fileA).size >= 256 * 1024, 15_000, 'the first file to fill');

    // SIGHUP: the file sink moves to b.bin; the buffer and the process stay.
    const text = JSON.parse(fs.readFileSync(config, 'utf8'));
    text.feeder.files = [{ path: fileB, ...sink }];
    fs.writeFileSync(config, JSON.stringify(text));
    d.child.kill('SIGHUP');
    await waitFor(() => fs.existsSync(fileB) && fs.statSync(fileB).size >= 256 * 1024, 15_000, 'the reloaded sink');
    const sizeA = fs.statSync(fileA).size;
    await new Promise((r) => setTimeout(r, 100));
    expect(fs.statSync(fileA).size).toBe(sizeA);

    // `qentropy feeder status` on the live daemon.
    const status = spawnSync(process.execPath, [cli, 'feeder', 'status', '--config', config], { encoding: 'utf8', env: process.env });
    expect(status.stdout).toMatch(/^feeder: running \(pid \d+/);
    expect(status.stdout).toContain(`sink file:${fileB}: `);
    expect(status.stdout).toMatch(/buffer: \d+ of 1048576 bytes, locked in memory|buffer: \d+ of 1048576 bytes, not locked/);
    expect(status.status === 0 || status.status === 3).toBe(true);

    // SIGTERM while 64 KiB writes run back to back.
    const sentAt = Date.now();
    d.child.kill('SIGTERM');
    const { code, at } = await d.exited;
    expect(code).toBe(0);
    expect(at - sentAt).toBeLessThan(scaled(5_000));
    const final = readStatus(statusFile)!;
    expect(final.running).toBe(false);
    const fed = final.sinks.find((s) => s.name === `file:${fileB}`)!;
    // Every byte in the file was a whole, counted feed: nothing half-written.
    expect(fs.statSync(fileB).size).toBe(fed.bytesFed);
    expect(fed.bytesFed % 1024).toBe(0);
    await waitFor(() => notify.messages().includes('STOPPING=1'), 10_000, 'STOPPING=1');
    notify.stop();
  });

  it('a feeder-only daemon loads no module of the roles and commands it does not run, and no undici', async () => {
    // The CLI as it ships is not bundled (bin/qentropy.js over tsc's output), so a lazily
    // imported module loads only when imported. Each src/ file is transpiled on its own
    // (esbuild, no bundling: the same module graph), and a hook logs every module resolved.
    const out = path.join(dir, 'unbundled');
    const sources = fs.readdirSync(srcPath(''), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
    const esbuild = path.join(repoRoot, 'node_modules', '.bin', 'esbuild');
    const built = spawnSync(esbuild, [...sources.map((f) => srcPath(f)), '--platform=node', '--format=esm', `--outbase=${srcPath('')}`, `--outdir=${out}`, '--log-level=error'], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    fs.writeFileSync(path.join(out, 'cli.mjs'), "import { main } from './cli/main.js';\nprocess.exitCode = await main(process.argv.slice(2));\n");
    const hook = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(process.env.MODULE_LOG, resolved.url + '\\n');
  return resolved;
}`;
    // Node's own modules load out of the hook's sight; the process lists them as it exits.
    fs.writeFileSync(
      path.join(out, 'log-modules.mjs'),
      `import { register } from 'node:module';\nimport { writeFileSync } from 'node:fs';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));\nprocess.on('exit', () => writeFileSync(process.env.BUILTIN_LOG, process.moduleLoadList.join('\\n')));\n`,
    );
    const builtinLog = path.join(dir, 'builtins.log');
    const log = path.join(dir, 'modules.log');
    fillUpstream(1024 * 1024);
    const { config } = await writeConfig('lazy', { kernel: { enabled: false }, files: [{ path: path.join(dir, 'lazy', 'out.bin'), bytes: 512, intervalMs: 60_000 }] });
    const child = spawn(process.execPath, ['--import', path.join(out, 'log-modules.mjs'), path.join(out, 'cli.mjs'), 'daemon', '--config', config], {
      env: { ...process.env, MODULE_LOG: log, BUILTIN_LOG: builtinLog },
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await waitFor(() => output.includes('qentropy daemon running'), 15_000, 'the daemon to run');
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    const loaded = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
    // It loaded what a feeder needs…
    // (prom-client's registry, counter and gauge are required from their own files by
    // metrics/prom.js, out of this ESM hook's sight.)
    for (const needed of ['/node_modules/pino/', '/unbundled/metrics/prom.js', '/unbundled/roles/feeder.js', '/unbundled/feeder/feeder.js']) {
      expect(loaded.some((url) => url.includes(needed)), needed).toBe(true);
    }
    // …and nothing of HTTP servers, databases, certificates, the KME, the quality service, undici.
    const unwanted = loaded.filter(
      (url) =>
        /\/node_modules\/(undici|fastify|better-sqlite3|pg|@peculiar\/x509)\//.test(url) ||
        /\/unbundled\/(kme|quality|accounts|server|sts)\//.test(url) ||
        /\/unbundled\/storage\/(sqlite|postgres)\.js$|\/unbundled\/pki\/(certs|files)\.js$/.test(url) ||
        /\/unbundled\/roles\/(entropy|quality|kme)\.js$/.test(url) ||
        /\/unbundled\/cli\/commands\/(token|fetch|sts|pki|kme|quality|feeder)\.js$/.test(url),
    );
    expect(unwanted).toEqual([]);
    // Nor Node's bundled undici (with http2, zlib and web streams, ~12 MB), which an ES
    // import of node:http loads through its lazy WebSocket getters (src/node-http.ts).
    const builtins = fs.readFileSync(builtinLog, 'utf8').split('\n');
    expect(builtins).toContain('NativeModule http');
    expect(builtins.filter((m) => /^NativeModule (internal\/deps\/undici\/undici|http2|zlib)$/.test(m))).toEqual([]);
  });

  it.skipIf(!haveSofthsm)('a wrong HSM PIN never ends the process: the PIN is tried once, and once more per reload', async () => {
    fillUpstream(1024 * 1024);
    const hsmDir = path.join(dir, 'hsm');
    const softhsmConf = initSofthsmToken(hsmDir, 'feeder-hsm', '135790');
    const pinFile = path.join(hsmDir, 'pin');
    fs.writeFileSync(pinFile, '000000\n', { mode: 0o600 });
    // The reported config: the PKCS#11 sink is the only sink, no status listener. With the
    // buffer full nothing held the event loop, and Node exited with 13 and no further line.
    const { config, statusFile } = await writeConfig('wrong-pin', {
      kernel: { enabled: false },
      buffer: { capacityBytes: 64 * 1024 },
      pkcs11: [{ module: softhsmModule, tokenLabel: 'feeder-hsm', pinFile, intervalMs: 100 }],
      status: { file: path.join(dir, 'wrong-pin', 'feeder-status.json'), intervalMs: 100, listen: false },
    });
    const d = startDaemon(['daemon', '--config', config], { env: { SOFTHSM2_CONF: softhsmConf } });
    const pinLines = () => d.stdout().split('\n').filter((l) => l.includes('CKR_PIN_INCORRECT'));
    await waitFor(() => d.stdout().includes('qentropy daemon running'), 15_000, 'the daemon to run');
    await waitFor(() => (readStatus(statusFile)?.buffer.level ?? 0) === 64 * 1024, 10_000, 'a full buffer');
    await waitFor(() => pinLines().length === 1, 10_000, 'the PIN to be tried');
    // Twenty sink intervals of the daemon's own time later (its status file says so), the
    // PIN has still been tried only once.
    const triedAt = readStatus(statusFile)!.updatedAt;
    await waitFor(() => (readStatus(statusFile)?.updatedAt ?? 0) >= triedAt + 2000, 30_000, 'two seconds of the daemon running with the sink disabled');
    expect(d.child.exitCode).toBeNull();
    expect(pinLines()).toHaveLength(1);
    expect(pinLines()[0]).toMatch(/sink disabled until the config is reloaded/);
    expect(readStatus(statusFile)!.sinks[0]).toMatchObject({ state: 'disabled', errors: 1, feeds: 0, lastErrorCode: 'CKR_PIN_INCORRECT' });

    // A reload tries the PIN again, exactly once.
    d.child.kill('SIGHUP');
    await waitFor(() => d.stdout().includes('feeder reloaded'), 10_000, 'the reload');
    await waitFor(() => pinLines().length >= 2, 10_000, 'the PIN to be tried again');
    expect(pinLines()).toHaveLength(2);
    // Counters are per process life (a reload is no restart): the second attempt is the
    // second error, once the status file has been written after it.
    await waitFor(() => readStatus(statusFile)?.sinks[0]?.errors === 2, 10_000, 'the status file to count the second attempt');
    expect(readStatus(statusFile)!.sinks[0]).toMatchObject({ state: 'disabled', errors: 2 });
    expect(d.child.exitCode).toBeNull();
    expect(d.stdout()).not.toContain('135790');

    d.child.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
  });

  it.skipIf(!isRoot || !haveSetpriv)('as nobody: the kernel sink reports EPERM clearly and the file sink keeps being fed', async () => {
    fillUpstream(1024 * 1024);
    const out = path.join(dir, 'nobody', 'out.bin');
    const { config, statusFile } = await writeConfig(
      'nobody',
      { kernel: { enabled: true, intervalMs: 100, bytes: 64 }, files: [{ path: out, bytes: 1024, intervalMs: 50 }], buffer: { capacityBytes: 64 * 1024 } },
      65534,
    );
    const d = startDaemon(['daemon', '--config', config], { asNobody: true });
    await waitFor(() => {
      const s = readStatus(statusFile);
      return Boolean(s && s.sinks[0]?.state === 'disabled' && (s.sinks[1]?.feeds ?? 0) >= 5);
    }, 15_000, 'EPERM on the kernel sink and feeds to the file');
    d.child.kill('SIGTERM');
    const { code } = await d.exited;
    expect(code).toBe(0);
    const s = readStatus(statusFile)!;
    expect(s.sinks[0]).toMatchObject({ name: 'kernel', state: 'disabled', lastErrorCode: 'EPERM', bytesFed: 0 });
    expect(s.sinks[0]!.lastError).toMatch(/CAP_SYS_ADMIN/);
    expect(s.sinks[1]!.bytesFed).toBe(fs.statSync(out).size);
    expect(s.sinks[1]!.bytesFed).toBeGreaterThanOrEqual(5 * 1024);
    const logged = d.stdout().split('\n').filter((l) => l.includes('"sink":"kernel"') && l.includes('EPERM'));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/sink disabled until the config is reloaded/);
  });
});
