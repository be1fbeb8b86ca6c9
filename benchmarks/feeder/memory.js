// Feeder memory (issue 14 item 19): what a feeder-only `qentropy daemon` holds while idle at
// the default cadence, next to rngd (rng-tools5) and a bare Node process, in one run.
//   node benchmarks/feeder/memory.js                   (root: the kernel sink and rngd)
//   BENCH_BASELINE_REF=main node benchmarks/feeder/memory.js
//   BENCH_NODE=$(bash scripts/node-line.sh 26) node benchmarks/feeder/memory.js
// BENCH_NODE runs the daemons and the bare Node reference on that Node binary (the local
// entropy server stays on this one: its SQLite driver is built for it).
// The daemon runs as it ships: bin/qentropy.js over the tsc output (dist/). BENCH_BUNDLE=1
// adds a row for the same tree as one esbuild bundle with code splitting (dependencies
// included), BENCH_BUNDLE=own for a bundle of our own code only; BENCH_SMAPS=1 prints each
// daemon's resident memory per mapped file. Two "floor" rows show what Node itself costs
// once it loads TLS, and with an https client and an http listener. This tree is compiled into a temp directory;
// with BENCH_BASELINE_REF, that git ref's src/ is compiled beside it (the "before"
// figure; it uses this tree's native addon, which only adds functions). Figures come from
// /proc/PID/status after BENCH_IDLE_SECONDS (default 20) of idling: VmRSS, VmHWM (peak),
// RssAnon (the process's own memory; the rest is the node binary and libraries mapped from
// disk and shared), Threads.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { describeEnvironment, feederUnitEnvironment } from './unit-env.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 20);
const baselineRef = process.env.BENCH_BASELINE_REF;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-bench-memory-'));
const children = [];
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const isRoot = process.getuid() === 0;
const node = process.env.BENCH_NODE ?? process.execPath;
const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();

/** Lays out a runnable package (bin, package.json, dist compiled from `srcRoot`) under `dest`. */
function prepare(srcRoot, dest) {
  fs.mkdirSync(dest, { recursive: true });
  for (const f of ['src', 'bin', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
    fs.cpSync(path.join(srcRoot, f), path.join(dest, f), { recursive: true });
  }
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(dest, 'node_modules'));
  for (const n of ['build', 'prebuilds']) if (fs.existsSync(path.join(root, n))) fs.symlinkSync(path.join(root, n), path.join(dest, n));
  const r = spawnSync(path.join(root, 'node_modules', '.bin', 'tsc'), ['-p', path.join(dest, 'tsconfig.build.json')], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tsc in ${dest}: ${r.stdout}${r.stderr}`);
  return path.join(dest, 'bin', 'qentropy.js');
}

function procStatus(pid) {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rss: kib('VmRSS'), hwm: kib('VmHWM'), anon: kib('RssAnon'), threads: Number(/^Threads:\s+(\d+)/m.exec(text)?.[1]) };
}

/** Resident KiB per mapped file (and anonymous memory), largest first: where the RSS is. */
function smapsByFile(pid) {
  const totals = new Map();
  let current = '';
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) current = head[1] || '[anon]';
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) totals.set(current, (totals.get(current) ?? 0) + Number(rss[1]));
  }
  return [...totals].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([f, k]) => `  ${(k / 1024).toFixed(1)} MB ${f}`).join('\n');
}

async function startServer() {
  const out = path.join(dir, 'server.js');
  const r = spawnSync(path.join(root, 'node_modules', '.bin', 'esbuild'), [path.join(here, 'server.ts'), '--bundle', '--platform=node', '--format=esm', '--packages=external', `--outfile=${out}`, '--log-level=error'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`esbuild: ${r.stderr}`);
  fs.copyFileSync(path.join(root, 'package.json'), path.join(dir, 'package.json'));
  if (!fs.existsSync(path.join(dir, 'node_modules'))) fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  for (const n of ['build', 'prebuilds']) if (fs.existsSync(path.join(root, n)) && !fs.existsSync(path.join(dir, n))) fs.symlinkSync(path.join(root, n), path.join(dir, n));
  const child = spawn(process.execPath, [out], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const line = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(d.toString())));
  return { child, ...JSON.parse(line) };
}

/** A feeder-only daemon at the default cadence; its /proc figures after the idle time. */
async function measureDaemon(name, cli, server, env = {}) {
  const tokenFile = path.join(dir, `${name}.token`);
  fs.writeFileSync(tokenFile, server.token, { mode: 0o600 });
  const config = path.join(dir, `${name}.json`);
  // Root: the default kernel sink (512 B every 60 s). Otherwise a file sink at the same cadence.
  const sinks = isRoot ? {} : { kernel: { enabled: false }, files: [{ path: path.join(dir, `${name}.bin`), bytes: 512, intervalMs: 60_000 }] };
  fs.writeFileSync(config, JSON.stringify({ stateDir: dir, log: { level: 'error' }, feeder: { enabled: true, sources: [{ url: server.url, tokenFile }], status: { file: path.join(dir, `${name}-status.json`), listen: { host: '127.0.0.1', port: 0 } }, ...sinks } }));
  const child = spawn(node, [cli, 'daemon', '--config', config], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } });
  children.push(child);
  await sleep(idleSeconds * 1000);
  const figures = procStatus(child.pid);
  if (process.env.BENCH_SMAPS) console.log(`${name}:\n${smapsByFile(child.pid)}`);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return figures;
}

async function measureRngd() {
  if (!isRoot || !fs.existsSync('/usr/sbin/rngd')) return undefined;
  const fifo = path.join(dir, 'rngd.fifo');
  spawnSync('mkfifo', [fifo]);
  const rngd = spawn('/usr/sbin/rngd', ['-f', '-q', '-r', fifo, '-o', '/dev/random', '-p', path.join(dir, 'rngd.pid'), '-n', '1', '-d', '1'], { stdio: 'ignore' });
  children.push(rngd);
  const w = fs.openSync(fifo, 'w');
  fs.writeSync(w, crypto.randomBytes(64 * 1024));
  await sleep(idleSeconds * 1000);
  const figures = procStatus(rngd.pid);
  rngd.kill('SIGTERM');
  fs.closeSync(w);
  return figures;
}

/**
 * A Node process that runs `script` and idles: bare Node, and the floors under any HTTPS
 * feeder (node:tls alone; an https client with an http status listener, as the feeder has).
 */
async function measureNode(script) {
  const child = spawn(node, ['-e', `${script}; setInterval(() => {}, 60_000)`], { stdio: 'ignore' });
  children.push(child);
  await sleep(Math.min(idleSeconds, 5) * 1000);
  const figures = procStatus(child.pid);
  child.kill('SIGTERM');
  return figures;
}

const after = prepare(root, path.join(dir, 'after'));
/** The same tree as one ES module bundle (code splitting keeps lazy imports lazy). */
function bundle(cli) {
  const pkg = path.dirname(path.dirname(cli));
  const outdir = path.join(pkg, 'dist', 'bundle');
  const r = spawnSync(path.join(root, 'node_modules', '.bin', 'esbuild'), [cli, '--bundle', '--splitting', '--platform=node', '--format=esm', `--outdir=${outdir}`, ...(process.env.BENCH_BUNDLE === 'own' ? ['--packages=external'] : ['--external:better-sqlite3', '--external:pg-native']), '--log-level=error', '--banner:js=import { createRequire as __qentropyRequire } from "node:module"; const require = __qentropyRequire(import.meta.url);'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`esbuild: ${r.stderr}`);
  return path.join(outdir, 'qentropy.js');
}
const bundled = process.env.BENCH_BUNDLE ? bundle(after) : undefined;
let before;
if (baselineRef) {
  const tree = path.join(dir, 'baseline-tree');
  fs.mkdirSync(tree);
  const archive = spawnSync('sh', ['-c', `git -C "${root}" archive "${baselineRef}" src bin package.json tsconfig.json tsconfig.build.json | tar -x -C "${tree}"`], { encoding: 'utf8' });
  if (archive.status !== 0) throw new Error(`git archive ${baselineRef}: ${archive.stderr}`);
  before = prepare(tree, path.join(dir, 'before'));
}
const server = await startServer();
const rows = [];
// One at a time, so they do not compete for the two cores.
if (before) rows.push([`qentropy feeder-only daemon, ${baselineRef} (before)`, await measureDaemon('before', before, server)]);
rows.push(['qentropy feeder-only daemon, this tree', await measureDaemon('after', after, server)]);
const unitEnv = feederUnitEnvironment(root);
rows.push([`same, with the feeder unit's ${describeEnvironment(unitEnv)}`, await measureDaemon('after-unit', after, server, unitEnv)]);
if (bundled) rows.push(['same, unit settings, as one esbuild bundle', await measureDaemon('bundled', bundled, server, unitEnv)]);
const rngd = await measureRngd();
if (rngd) rows.push(['rngd (rng-tools5), named pipe -> /dev/random, FIPS 140-2', rngd]);
rows.push(["floor: `node -e \"require('tls')\"`", await measureNode("require('tls')")]);
rows.push(["floor: an https client and an http listener on 127.0.0.1, nothing else", await measureNode("require('https'); require('http').createServer().listen(0, '127.0.0.1')")]);
rows.push(['bare `node -e "setInterval(...)"`, for reference', await measureNode('0')]);
server.child.kill('SIGTERM');

const mb = (kib) => (kib / 1024).toFixed(1);
console.log(`\nfeeder memory (${os.cpus()[0]?.model ?? 'cpu'}, ${os.cpus().length} cores, Linux ${os.release()}, Node ${nodeVersion}), load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, idle ${idleSeconds} s${isRoot ? ', kernel sink' : ', file sink'}`);
console.log('\n| process | RSS MB | peak RSS MB | own (RssAnon) MB | threads |\n|---|---|---|---|---|');
for (const [name, f] of rows) console.log(`| ${name} | ${mb(f.rss)} | ${mb(f.hwm)} | ${mb(f.anon)} | ${f.threads} |`);
const bare = rows.at(-1)[1].rss;
for (const [name, f] of rows.filter(([n]) => n.startsWith('qentropy') || n.startsWith('same') || n.startsWith('floor'))) console.log(`${name}: ${(f.rss / bare).toFixed(2)}x bare Node's RSS`);
process.exit(0);
