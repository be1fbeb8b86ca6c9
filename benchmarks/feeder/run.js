// Feeder benchmark (issue 7): idle cost at the default cadence and peak throughput, next to
// Debian's rngd (rng-tools5).
//   npm run bench:feeder        (root: the kernel sink and rngd need CAP_SYS_ADMIN)
//   BENCH_SECONDS=10 BENCH_IDLE_SECONDS=30 node benchmarks/feeder/run.js
// BENCH_BASELINE_ROOT=/path/to/other/checkout (e.g. a `git worktree` of an older commit):
// its daemon is bundled too and the throughput runs alternate between the two builds,
// BENCH_ROUNDS times (default 1; 3 with a baseline), each against the same server.
// BENCH_DAEMON_NODE_ARGS passes Node options to the daemons (e.g. "--cpu-prof
// --cpu-prof-dir=/tmp/p" or "--trace-gc" for where their time goes).
// The daemon and a local entropy service are bundled from src/ with esbuild into a temp
// directory (no dist/ needed) and run as their own processes; CPU is read from
// /proc/PID/stat (utime + stime) of the daemon alone.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { describeEnvironment, feederUnitEnvironment } from './unit-env.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);
const baselineRoot = process.env.BENCH_BASELINE_ROOT ? path.resolve(process.env.BENCH_BASELINE_ROOT) : undefined;
const rounds = Number(process.env.BENCH_ROUNDS ?? (baselineRoot ? 3 : 1));
// BENCH_DAEMON_NODE_ARGS: Node options for the daemons, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p".
const daemonNodeArgs = process.env.BENCH_DAEMON_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-bench-feeder-'));
const children = [];
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function bundle(entry, out) {
  const r = spawnSync(path.join(root, 'node_modules', '.bin', 'esbuild'), [entry, '--bundle', '--platform=node', '--format=esm', '--packages=external', `--outfile=${out}`, '--log-level=error'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`esbuild: ${r.stderr}`);
}
function bundleCli(from, out) {
  const entry = path.join(dir, `${out}.entry.ts`);
  fs.writeFileSync(entry, `import { main } from ${JSON.stringify(path.join(from, 'src/cli/main.ts'))};\nprocess.exitCode = await main(process.argv.slice(2));\n`);
  bundle(entry, path.join(dir, out));
}
bundleCli(root, 'qentropy.js');
if (baselineRoot) bundleCli(baselineRoot, 'baseline.js');
bundle(path.join(here, 'server.ts'), path.join(dir, 'server.js'));
fs.copyFileSync(path.join(root, 'package.json'), path.join(dir, 'package.json'));
fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
for (const n of ['build', 'prebuilds']) if (fs.existsSync(path.join(root, n))) fs.symlinkSync(path.join(root, n), path.join(dir, n));

function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS; // utime, stime
}

async function startServer() {
  const child = spawn(process.execPath, [path.join(dir, 'server.js')], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const line = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(d.toString())));
  return { child, ...JSON.parse(line) };
}

// Each build's daemon runs with its feeder unit's Environment= settings (thread pools, V8
// options), as systemd would run it; BENCH_NO_UNIT_ENV=1 runs it with Node's defaults.
const unitEnvironment = (checkout) => (process.env.BENCH_NO_UNIT_ENV ? {} : feederUnitEnvironment(checkout));
const unitEnv = { 'qentropy.js': unitEnvironment(root), ...(baselineRoot ? { 'baseline.js': unitEnvironment(baselineRoot) } : {}) };

function startDaemon(name, server, feeder, cli = 'qentropy.js') {
  const tokenFile = path.join(dir, `${name}.token`);
  fs.writeFileSync(tokenFile, server.token, { mode: 0o600 });
  const config = path.join(dir, `${name}.json`);
  fs.writeFileSync(config, JSON.stringify({ stateDir: dir, log: { level: 'error' }, feeder: { enabled: true, sources: [{ url: server.url, tokenFile }], status: { file: path.join(dir, `${name}-status.json`), listen: false }, ...feeder } }));
  const child = spawn(process.execPath, [...daemonNodeArgs, path.join(dir, cli), 'daemon', '--config', config], {
    cwd: dir,
    env: { ...process.env, ...unitEnv[cli] },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.push(child);
  return child;
}

async function stop(child) {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

const fileSize = (f) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
const isRoot = process.getuid() === 0;
const server = await startServer();
const results = {};

// 1. Peak throughput into the file sink (SP 800-90B on every block; then also FIPS 140-2),
//    for each build, alternating.
const contenders = [...(baselineRoot ? [['baseline', 'baseline.js']] : []), ['this build', 'qentropy.js']];
for (let round = 0; round < rounds; round++) {
  for (const [build, cli] of contenders) {
    for (const fips of [false, true]) {
      const name = `through-${round}-${cli}-${fips}`;
      const out = path.join(dir, `${name}.bin`);
      const d = startDaemon(
        name,
        server,
        {
          kernel: { enabled: false },
          health: { fips140: fips },
          buffer: { capacityBytes: 16 * 1024 * 1024 },
          sources: [{ url: server.url, tokenFile: path.join(dir, `${name}.token`), blocksPerRequest: 512 }],
          files: [{ path: out, bytes: 1024 * 1024, intervalMs: 0 }],
        },
        cli,
      );
      while (fileSize(out) < 16 * 1024 * 1024) await sleep(50); // past start-up and the first buffer fill
      const b0 = fileSize(out);
      const c0 = cpuSeconds(d.pid);
      const s0 = cpuSeconds(server.child.pid);
      const t0 = process.hrtime.bigint();
      await sleep(seconds * 1000);
      const bytes = fileSize(out) - b0;
      const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpu = cpuSeconds(d.pid) - c0;
      const serverCpu = cpuSeconds(server.child.pid) - s0;
      await stop(d);
      fs.rmSync(out, { force: true });
      (results[`${build}-${fips ? 'fips' : '90b'}`] ??= []).push({ mbps: bytes / elapsed / 1e6, cpu: cpu / elapsed, serverCpu: serverCpu / elapsed });
    }
  }
}

// 2. rngd reading the same kind of bytes from a named pipe, feeding /dev/random (FIPS 140-2 on).
const rngdPath = '/usr/sbin/rngd';
if (fs.existsSync(rngdPath) && isRoot) {
  const fifo = path.join(dir, 'rngd.fifo');
  spawnSync('mkfifo', [fifo]);
  const rngd = spawn(rngdPath, ['-f', '-q', '-r', fifo, '-o', '/dev/random', '-p', path.join(dir, 'rngd.pid'), '-n', '1', '-d', '1'], { stdio: 'ignore' });
  children.push(rngd);
  const w = fs.openSync(fifo, 'w');
  let written = 0;
  let writing = true;
  const chunk = crypto.randomBytes(64 * 1024);
  const pump = () => {
    if (!writing) return;
    fs.write(w, chunk, 0, chunk.length, null, (err, n) => {
      if (err) return;
      written += n;
      setImmediate(pump);
    });
  };
  pump();
  await sleep(1000);
  const w0 = written;
  const c0 = cpuSeconds(rngd.pid);
  const t0 = process.hrtime.bigint();
  await sleep(seconds * 1000);
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  results.rngd = { mbps: (written - w0) / elapsed / 1e6, cpu: (cpuSeconds(rngd.pid) - c0) / elapsed };
  writing = false;
  rngd.kill('SIGTERM');
  fs.closeSync(w);
}

// 3. Idle cost at the default cadence (kernel sink every 60 s, 512 bytes; buffer 64 KiB),
//    and the cost of one kernel feed measured at a 100 ms cadence, scaled to an hour.
if (isRoot) {
  const idle = startDaemon('idle', server, {});
  await sleep(5000); // start-up, first pull, first feed
  const c0 = cpuSeconds(idle.pid);
  await sleep(idleSeconds * 1000);
  const idleRate = (cpuSeconds(idle.pid) - c0) / idleSeconds;
  await stop(idle);
  const busy = startDaemon('busy', server, { kernel: { intervalMs: 100, bytes: 512 }, buffer: { capacityBytes: 4 * 1024 * 1024 } });
  await sleep(5000);
  const b0 = cpuSeconds(busy.pid);
  await sleep(10_000);
  const perFeed = Math.max(0, (cpuSeconds(busy.pid) - b0) / 100 - idleRate / 10); // ~100 feeds in 10 s
  await stop(busy);
  results.idle = { perHour: idleRate * 3600, perFeedMs: perFeed * 1000, feedsPerHour: 60 };
}
await stop(server.child);

const f = (x, d = 1) => (x === undefined ? 'n/a' : x.toFixed(d));
console.log(`\nfeeder benchmark (${os.cpus()[0]?.model ?? 'cpu'}, ${os.cpus().length} cores, Linux ${os.release()}, Node ${process.version})`);
for (const [cli, env] of Object.entries(unitEnv)) {
  const settings = describeEnvironment(env);
  console.log(`${cli === 'baseline.js' ? 'baseline' : 'this build'}: daemon environment from its feeder unit: ${settings || '(none: Node defaults)'}`);
}
console.log(`load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${rounds} round(s) of ${seconds} s`);
console.log('\n| contender | MB/s (each run) | CPU (cores busy) | the entropy API\'s CPU |\n|---|---|---|---|');
const runs = (rows, key, d) => rows?.map((r) => f(r[key], d)).join(' · ') ?? 'n/a';
for (const [build] of contenders) {
  const label = contenders.length > 1 ? `${build}: ` : '';
  console.log(`| ${label}qentropy feeder, local entropy API -> file sink, SP 800-90B | ${runs(results[`${build}-90b`], 'mbps')} | ${runs(results[`${build}-90b`], 'cpu', 2)} | ${runs(results[`${build}-90b`], 'serverCpu', 2)} |`);
  console.log(`| ${label}qentropy feeder, same, + FIPS 140-2 tests | ${runs(results[`${build}-fips`], 'mbps')} | ${runs(results[`${build}-fips`], 'cpu', 2)} | ${runs(results[`${build}-fips`], 'serverCpu', 2)} |`);
}
console.log(`| rngd (rng-tools5), named pipe -> /dev/random, FIPS 140-2 | ${f(results.rngd?.mbps)} | ${f(results.rngd?.cpu, 2)} | |`);
if (results.idle) {
  console.log('\n| idle cost | CPU seconds per hour |\n|---|---|');
  console.log(`| qentropy feeder, default cadence (kernel 512 B / 60 s), measured ${idleSeconds} s, scaled | ${f(results.idle.perHour, 2)} |`);
  console.log(`| of which one kernel feed (RNDADDENTROPY + RNDRESEEDCRNG + bookkeeping) | ${f(results.idle.perFeedMs, 2)} ms each, x60/h |`);
  console.log(`| rngd (rng-tools5) on this kernel, its ${seconds} s window scaled | ${f((results.rngd?.cpu ?? NaN) * 3600, 0)} |`);
}
if (results.rngd && results.rngd.mbps < 0.01) {
  console.log('\nrngd moved (almost) nothing: rng-tools5 waits in poll(POLLOUT) on /dev/random for the pool to ask for');
  console.log('more, and Linux >= 5.18 never asks once its generator is ready. That is why qentropy is timer-driven.');
}
process.exit(0);
