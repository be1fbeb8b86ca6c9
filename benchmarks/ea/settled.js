// `qentropy ea FILE --both` on non-IID data, against a baseline build of qentropy, side by
// side: how much the IID track saves by stopping once its verdict is settled (issue 31 item 3).
//
//   npm run build:ts && node benchmarks/ea/settled.js --baseline DIR [--repeat 3 --cap 180 --threads N]
//
// DIR is another qentropy checkout with its dist/ and build/ (e.g. a worktree of the commit
// before the change). The input is made here: 10^6 8-bit samples of a random walk mod 256
// (steps -3..3, a fixed seed), the raw output of a slow noise source. Each run is a fresh
// process, timed by wall clock, the two builds alternated; a run still going after --cap
// seconds is killed and shown as "> cap" (the baseline runs up to 10,000 shuffles, each with
// a bzip2 compression statistic, on such data).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}
const baseline = arg('baseline', undefined);
if (!baseline) throw new Error('--baseline DIR: a qentropy checkout (with dist/ and build/) to compare with');
const repeat = Number(arg('repeat', '3'));
const capSeconds = Number(arg('cap', '180'));
const threads = arg('threads', String(os.availableParallelism()));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-bench-settled-'));
const file = path.join(dir, 'walk.bin');
const walk = new Uint8Array(1_000_000);
let x = 0;
let state = 12345;
for (let i = 0; i < walk.length; i++) {
  state = (Math.imul(state, 1103515245) + 12345) >>> 0;
  x = (x + ((state >>> 16) % 7) + 253) & 0xff;
  walk[i] = x;
}
fs.writeFileSync(file, walk);

function run(checkout) {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [path.join(checkout, 'bin', 'qentropy.js'), 'ea', file, '--both', '--json', '--threads', threads], {
    encoding: 'utf8',
    timeout: capSeconds * 1000,
    maxBuffer: 1 << 24,
  });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (r.error?.code === 'ETIMEDOUT' || r.signal) return { seconds, killed: true };
  if (r.status !== 0) throw new Error(`${checkout}: exit ${r.status}: ${r.stderr}`);
  const j = JSON.parse(r.stdout);
  return { seconds, killed: false, shuffles: j.iid.permutation.shuffles, iid: j.iid.passed, assessed: j.non_iid.h_assessed };
}

const show = (r) => (r.killed ? `> ${capSeconds} s (killed)` : `${r.seconds.toFixed(1)} s, ${r.shuffles} shuffles, IID ${r.iid}, non-IID ${r.assessed.toFixed(6)}`);
console.log(`qentropy ea walk.bin --both --threads ${threads}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
const times = { new: [], baseline: [] };
for (let i = 0; i < repeat; i++) {
  for (const [name, checkout] of [
    ['new', root],
    ['baseline', baseline],
  ]) {
    const r = run(checkout);
    times[name].push(r.killed ? Infinity : r.seconds);
    console.log(`  run ${i + 1} ${name.padEnd(8)} ${show(r)}`);
  }
}
const median = (a) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)];
for (const [name, a] of Object.entries(times)) {
  const f = (s) => (Number.isFinite(s) ? `${s.toFixed(1)} s` : `> ${capSeconds} s`);
  console.log(`${name.padEnd(8)} min ${f(Math.min(...a))}, median ${f(median(a))}`);
}
console.log(`load after: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
fs.rmSync(dir, { recursive: true, force: true });
