// SP 800-90B assessment speed: `qentropy ea` against NIST's ea_non_iid / ea_iid, side by
// side on the same 10^6-sample files (NIST's own truerand_8bit, truerand_4bit and
// truerand_1bit from ../shared/vectors/sp800-90b), one thread and every core.
//
//   npm run build:ts && npm run bench:ea [-- --repeat 1 --tracks non-iid,iid --files 8-bit,4-bit,1-bit --pin CPU|none
//     --threads 1,N]   (N: every core, the default)
//
// NIST's tool is not part of the project: point NIST_EA_DIR at a directory holding
// ea_non_iid and ea_iid built from usnistgov/SP800-90B_EntropyAssessment (see
// benchmarks/README.md for the commit and flags measured). Without it, the benchmark prints
// our figures next to the reference times recorded in ../shared/vectors/sp800-90b/README.md.
// Each run is a fresh process (ours: node bin/qentropy.js ea FILE --json), timed by wall
// clock; the assessed min-entropy of both tools is printed to show they agree. Non-IID times
// are the best of --repeat. IID times are the mean (a min/median line under each row gives
// both tools' spread and the ratio of their medians): how many shuffles the permutation test's
// counting rule needs is random in both tools (each run draws its own shuffles), so the
// shuffles and compressions each run needed are printed too.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { median } from '../lib/stats.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const vectors = path.resolve(root, '..', 'shared', 'vectors', 'sp800-90b');
const cli = path.join(root, 'bin', 'qentropy.js');
if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'main.js'))) throw new Error('run npm run build:ts first');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}
const repeat = Number(arg('repeat', '1'));
const tracks = arg('tracks', 'non-iid,iid').split(',');
const only = arg('files', '8-bit,4-bit,1-bit').split(',');
const cores = os.availableParallelism();
const nistDir = process.env.NIST_EA_DIR;
const threadCounts = arg('threads', [...new Set([1, cores])].join(',')).split(',').map(Number);
// One-thread rows run both tools on one CPU (taskset): on the VMs measured here the two
// vCPUs ran the same process ~50% apart in speed (one also takes the host's interrupts), so
// unpinned one-thread runs timed the scheduler's choice of CPU as much as either tool.
// --pin none turns this off; the default is the last CPU.
const pinArg = arg('pin', String(cores - 1));
const pin = pinArg !== 'none' && cores > 1 && spawnSync('taskset', ['-c', pinArg, 'true']).status === 0 ? pinArg : null;

// Reference wall times from ../shared/vectors/sp800-90b/README.md (same kind of machine).
const RECORDED = {
  'non-iid 8-bit': '12.6-13.4 s',
  'non-iid 1-bit': '0.6 s',
  'iid 8-bit': '6-16 s',
  'iid 1-bit': 'not finished after 18 CPU-minutes',
};

// One timed run of a command (pinned to one CPU for one-thread rows).
function runOnce([cmd, args, env, threads]) {
  const [file, argv] = threads === 1 && pin !== null ? ['taskset', ['-c', pin, cmd, ...args]] : [cmd, args];
  const t0 = process.hrtime.bigint();
  const r = spawnSync(file, argv, { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 << 20 });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  return { seconds, out: r.stdout };
}

// --repeat runs of each command, the tools taking turns (A B, B A, A B, ...): the host's
// other tenants change the machine's speed from one minute to the next, and taking turns
// spreads that over both tools instead of handing it to whichever ran second.
function sideBySide(commands) {
  const runs = commands.map(() => []);
  for (let i = 0; i < repeat; i++) {
    const order = commands.map((_, k) => (i % 2 === 0 ? k : commands.length - 1 - k));
    for (const k of order) runs[k].push(runOnce(commands[k]));
  }
  return runs.map((r) => ({
    seconds: Math.min(...r.map((x) => x.seconds)),
    mean: r.reduce((a, x) => a + x.seconds, 0) / r.length,
    median: median(r.map((x) => x.seconds)),
    runs: r,
    out: r[r.length - 1].out,
  }));
}

const mean = (xs) => xs.reduce((a, x) => a + x, 0) / xs.length;

const oursCommand = (track, file, threads) => [process.execPath, [cli, 'ea', file, `--${track}`, '--json', '--threads', String(threads)], {}, threads];

function ours(track, r) {
  const j = JSON.parse(r.out);
  if (track !== 'iid') return { seconds: r.seconds, h: j.non_iid.h_assessed, verdict: '' };
  // Shuffles run, and how many of them computed the compression statistic (its counts).
  const perms = r.runs.map((x) => JSON.parse(x.out).iid.permutation);
  const work = perms.map((p, i) => ({
    seconds: r.runs[i].seconds,
    shuffles: p.shuffles,
    compressions: p.statistics.compression.counts.reduce((a, c) => a + c, 0),
  }));
  const shuffles = mean(work.map((w) => w.shuffles));
  const compressions = mean(work.map((w) => w.compressions));
  return { seconds: r.mean, h: j.iid.h_assessed, verdict: j.iid.passed ? 'IID' : 'not IID', shuffles, compressions, work };
}

// ea_iid prints its progress (a percentage of its 10,000 rounds) only at verbosity 2 (-v);
// there the assessed value is the min(H_original, k X H_bitstring) line (H_original for bits).
const nistCommand = (track, file, threads) => [
  path.join(nistDir, track === 'iid' ? 'ea_iid' : 'ea_non_iid'),
  [...(track === 'iid' ? ['-v'] : ['-v', '-v', '-v']), file],
  { OMP_NUM_THREADS: String(threads) },
  threads,
];

function nist(track, r) {
  const m = /Assessed min entropy: (\S+)/.exec(r.out) ?? /min\(H_original, \d+ X H_bitstring\): (\S+)/.exec(r.out) ?? /^H_original: (\S+)/m.exec(r.out);
  if (track !== 'iid') return { seconds: r.seconds, h: m ? Number(m[1]) : NaN, verdict: '' };
  // The compression statistic's three counts are in its results table.
  const work = r.runs.map((x) => {
    const c = /^\s*compression\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(x.out);
    return {
      seconds: x.seconds,
      shuffles: Math.round(Number([...x.out.matchAll(/([\d.]+)% of Permutation test rounds/g)].pop()?.[1] ?? NaN) * 100),
      compressions: c ? Number(c[1]) + Number(c[2]) + Number(c[3]) : NaN,
    };
  });
  return {
    seconds: r.mean,
    h: m ? Number(m[1]) : NaN,
    verdict: /IID permutation tests: Passed|Passed IID permutation tests/.test(r.out) ? 'IID' : 'not IID',
    shuffles: mean(work.map((w) => w.shuffles)),
    compressions: mean(work.map((w) => w.compressions)),
    work,
  };
}

// IID at equal work. Each run's time is close to fixed + a x compressions + b x shuffles, and
// how many of each the counting rule asks for is random, so a mean over a few runs says as
// much about the draws as about the tool. Fitting a and b per tool (least squares over its
// runs) and pricing both tools at the same work, the mean counts of all runs of both, takes
// the draws out. Needs runs whose counts differ; null when the fit is not usable.
function fitWork(runs) {
  if (runs.length < 4 || runs.some((w) => !Number.isFinite(w.shuffles) || !Number.isFinite(w.compressions))) return null;
  // Normal equations for seconds ~ f + a C + b S, solved by Cramer's rule.
  const rows = runs.map((w) => [1, w.compressions, w.shuffles]);
  const m = [0, 1, 2].map((i) => [0, 1, 2].map((j) => rows.reduce((s, r) => s + r[i] * r[j], 0)));
  const v = [0, 1, 2].map((i) => rows.reduce((s, r, k) => s + r[i] * runs[k].seconds, 0));
  const det = (x) =>
    x[0][0] * (x[1][1] * x[2][2] - x[1][2] * x[2][1]) - x[0][1] * (x[1][0] * x[2][2] - x[1][2] * x[2][0]) + x[0][2] * (x[1][0] * x[2][1] - x[1][1] * x[2][0]);
  const d = det(m);
  if (Math.abs(d) < 1e-9) return null;
  const [f, a, b] = [0, 1, 2].map((c) => det(m.map((row, i) => row.map((x, j) => (j === c ? v[i] : x)))) / d);
  return a > 0 && b > 0 ? { f, a, b } : null;
}

const equalWork = (o, n) => equalWorkOf(o.work, n.work);

// Both sets of runs priced at the same work: speedup is the second's price over the first's.
function equalWorkOf(oursRuns, theirRuns) {
  const ours = fitWork(oursRuns);
  const theirs = fitWork(theirRuns);
  if (!ours || !theirs) return null;
  const all = [...oursRuns, ...theirRuns];
  const c = mean(all.map((w) => w.compressions));
  const s = mean(all.map((w) => w.shuffles));
  const price = (x) => x.f + x.a * c + x.b * s;
  return { c, s, ours, theirs, speedup: price(theirs) / price(ours), ourSeconds: price(ours), theirSeconds: price(theirs) };
}

const files = [
  ['8-bit', 'truerand_8bit.bin'],
  ['4-bit', 'truerand_4bit.bin'],
  ['1-bit', 'truerand_1bit.bin'],
];

console.log(`SP 800-90B assessment benchmark, ${os.cpus()[0]?.model ?? 'cpu'}, ${cores} cores, load average ${os.loadavg()[0].toFixed(1)}`);
// Our figures include starting Node and loading the CLI; this is that fixed cost. Measured
// with `ea --help`, which loads the CLI and the ea command as a run does: `qentropy version`
// also probes OpenSSL's post-quantum groups (0.06-0.1 s more on the Zen 5 VM of run 17).
const [startup] = sideBySide([[process.execPath, [cli, 'ea', '--help'], {}, 1]]);
console.log(`qentropy process start-up (qentropy ea --help): ${startup.seconds.toFixed(2)} s, included below`);
console.log(pin !== null ? `one-thread rows: both tools pinned to CPU ${pin} (taskset)` : 'one-thread rows: not pinned');
// QENTROPY_SIMD=avx2 runs our kernels of a CPU without AVX-512 (native/common/cpu.cc); NIST's
// tool is whatever it was built as (-march=native in its Makefile; x86-64-v3 for AVX2 only).
console.log(`qentropy vector paths: ${process.env.QENTROPY_SIMD ? `capped by QENTROPY_SIMD=${process.env.QENTROPY_SIMD}` : 'all this CPU has'}`);
console.log(nistDir ? `NIST tool: ${nistDir}` : 'NIST tool: NIST_EA_DIR not set; showing the reference times recorded with the vectors');
console.log('');
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);
console.log(`${pad('run', 22)}${lpad('threads', 8)}${lpad('qentropy', 11)}${lpad('NIST', 12)}${lpad('speed-up', 10)}   assessed (ours / NIST)`);
for (const track of tracks) {
  for (const [label, name] of files.filter(([label]) => only.includes(label))) {
    const file = path.join(vectors, name);
    const ourWork = {};  // IID runs per thread count, for the scaling line
    for (const threads of threadCounts) {
      // ea_iid on 10^6 binary samples runs for tens of minutes (the reference did not finish
      // in 18 CPU-minutes); set NIST_EA_IID_1BIT=1 to wait for it anyway.
      const skipNist = !nistDir || (track === 'iid' && label === '1-bit' && !process.env.NIST_EA_IID_1BIT);
      const [ourRuns, nistRuns] = sideBySide([oursCommand(track, file, threads), ...(skipNist ? [] : [nistCommand(track, file, threads)])]);
      const o = ours(track, ourRuns);
      if (o.work) ourWork[threads] = o.work;
      const key = `${track} ${label}`;
      let nistCell = RECORDED[key] ? `(${RECORDED[key]})` : '-';
      let speed = '';
      let agree = `${o.h.toFixed(6)} ${o.verdict}${track === 'iid' ? `; shuffles ${o.shuffles.toFixed(0)}, compressions ${o.compressions.toFixed(0)}` : ''}`;
      let nistWork = null;
      if (!skipNist) {
        const n = nist(track, nistRuns);
        nistWork = n.work ? n : null;
        nistCell = `${n.seconds.toFixed(2)} s`;
        speed = `${(n.seconds / o.seconds).toFixed(1)}x`;
        agree = `${o.h.toFixed(6)} / ${n.h.toFixed(6)} ${o.verdict}${o.verdict ? ` / ${n.verdict}` : ''}`;
        if (track === 'iid') agree += `; shuffles ${o.shuffles.toFixed(0)} / ${n.shuffles.toFixed(0)}, compressions ${o.compressions.toFixed(0)} / ${n.compressions.toFixed(0)}`;
      }
      console.log(`${pad(key, 22)}${lpad(threads, 8)}${lpad(`${o.seconds.toFixed(2)} s`, 11)}${lpad(nistCell, 12)}${lpad(speed, 10)}   ${agree}`);
      // Every run of both tools as min / median (the row above gives the mean for IID, the
      // best for non-IID), and the ratio of the medians.
      if (repeat > 1) {
        const spread = (r) => `${r.seconds.toFixed(2)}/${r.median.toFixed(2)}`;
        console.log(
          `${pad('  min/median', 22)}${lpad(threads, 8)}${lpad(spread(ourRuns), 11)}${lpad(skipNist ? '' : spread(nistRuns), 12)}` +
            `${lpad(skipNist ? '' : `${(nistRuns.median / ourRuns.median).toFixed(1)}x`, 10)}   of ${repeat} alternated runs each`,
        );
      }
      // NIST's shuffle count is a real count with one thread only (see benchmarks/README.md).
      const e = track === 'iid' && threads === 1 && nistWork ? equalWork(o, nistWork) : null;
      if (e) {
        const ms = (x) => `${(x * 1000).toFixed(1)} ms`;
        console.log(
          `${pad(`  at equal work`, 22)}${lpad(threads, 8)}${lpad(`${e.ourSeconds.toFixed(2)} s`, 11)}${lpad(`${e.theirSeconds.toFixed(2)} s`, 12)}${lpad(`${e.speedup.toFixed(1)}x`, 10)}` +
            `   ${e.c.toFixed(0)} compressions, ${e.s.toFixed(0)} shuffles; per compression ${ms(e.ours.a)} / ${ms(e.theirs.a)}, per shuffle ${ms(e.ours.b)} / ${ms(e.theirs.b)}`,
        );
      }
    }
    // Our thread scaling at equal work: both thread counts' runs fitted the same way and
    // priced at the mean work of all of them (the shuffles each run needs are drawn anew).
    const scaling = cores > 1 && ourWork[1] && ourWork[cores] ? equalWorkOf(ourWork[cores], ourWork[1]) : null;
    if (scaling)
      console.log(
        `  qentropy ${cores} threads against 1 at equal work (${scaling.c.toFixed(0)} compressions, ${scaling.s.toFixed(0)} shuffles): ` +
          `${scaling.theirSeconds.toFixed(2)} s -> ${scaling.ourSeconds.toFixed(2)} s, ${scaling.speedup.toFixed(2)}x`,
      );
  }
}
