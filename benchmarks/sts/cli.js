// The STS battery through the command line, as a user runs it:
//   qentropy sts FILE --format binary --streams 100 --bits 1000000 --json --threads T
// wall time of the whole process (start-up, reading the file, the battery, the JSON),
// next to the fixed start-up cost (`node -e 0`, `qentropy version`), side by side with a
// baseline build and the other implementations of the battery when they are built:
// NIST sts-2.1.2's `assess` (NIST_STS_DIR) and Sýs & Říha's fast STS (SYS_RIHA_STS_DIR).
//
//   npm run build:ts && [NIST_STS_DIR=DIR] [SYS_RIHA_STS_DIR=DIR] node benchmarks/sts/cli.js
//     [--runs 5] [--streams 100] [--bits 1000000] [--baseline /work/main] [--node PATH]...
//
// --baseline is another checkout with its own dist/ and build/ (for example the previous
// commit's); --node adds a Node binary to compare (each contender runs under each Node).
// NIST_STS_DIR is NIST's sts directory after `make` (assess, templates/, experiments/
// AlgorithmTesting/<test>/). SYS_RIHA_STS_DIR is the same layout for Sýs & Říha's
// NIST-STS-optimised (their NIST/NIST/ directory with `assess` built from its sources):
// it is NIST's 2.1.1 assess whose `-fast` argument switches every test to their faster
// version, so both run the same 15 tests with the same defaults on the same file, one thread.
// Runs are alternated (contender A, B, C, A, B, C, ...) so a load change hits all alike;
// min and median of --runs each, with the load average before and after.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { median } from '../lib/stats.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}
function args(name) {
  return process.argv.flatMap((a, i) => (a === `--${name}` ? [process.argv[i + 1]] : []));
}
const runs = Number(arg('runs', 5));
const streams = Number(arg('streams', 100));
const bits = Number(arg('bits', 1_000_000));
const baseline = arg('baseline', undefined);
const nodes = [process.execPath, ...args('node')];
const nistDir = process.env.NIST_STS_DIR;
const sysRihaDir = process.env.SYS_RIHA_STS_DIR;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-sts-cli-'));
const file = path.join(dir, 'random.bin');
fs.writeFileSync(file, crypto.randomBytes(Math.ceil((streams * bits) / 8)), { mode: 0o600 });

const nodeLabel = (node) => {
  const r = spawnSync(node, ['--version'], { encoding: 'utf8' });
  return `node ${r.stdout.trim()}`;
};

// Each contender: a label and the command to run; checked once for success first.
const contenders = [];
const checkouts = [['this build', root], ...(baseline ? [['baseline ' + baseline, path.resolve(baseline)]] : [])];
for (const node of nodes) {
  const nl = nodes.length > 1 ? `, ${nodeLabel(node)}` : '';
  contenders.push({ label: `node -e 0${nl}`, cmd: [node, '-e', '0'] });
  for (const [label, dirPath] of checkouts) {
    const bin = path.join(dirPath, 'bin', 'qentropy.js');
    contenders.push({ label: `qentropy version, ${label}${nl}`, cmd: [node, bin, 'version'] });
    for (const threads of [1, 2]) {
      contenders.push({
        label: `qentropy sts ${threads}T, ${label}${nl}`,
        cmd: [node, bin, 'sts', file, '--format', 'binary', '--streams', String(streams), '--bits', String(bits), '--json', '--threads', String(threads)],
      });
    }
  }
}
// assess is interactive and reads its templates relative to its own directory:
// input file (0), the path, all tests (1), default parameters (0), streams, binary (1).
// Its main() returns 1 when it has run (0 only for a usage error), also when it stopped
// reading early (a short file: "READ ERROR" on stdout), so the warm-up run checks its
// freq.txt for one full-length line per stream: a run that tested nothing is not timed.
const answers = `0\n${file}\n1\n0\n${streams}\n1\n`;
const assessRead = (stsDir) => () => {
  const freq = fs.readFileSync(path.join(stsDir, 'experiments', 'AlgorithmTesting', 'freq.txt'), 'utf8');
  const full = freq.split('\n').filter((l) => l.includes(`BITSREAD = ${bits} `)).length;
  if (full !== streams) throw new Error(`${stsDir}: assess read ${full} of ${streams} streams of ${bits} bits`);
};
if (nistDir) {
  contenders.push({ label: 'NIST sts-2.1.2 assess (1T)', cmd: [path.join(nistDir, 'assess'), String(bits)], cwd: nistDir, input: answers, okStatus: 1, check: assessRead(nistDir) });
}
if (sysRihaDir) {
  // The same prompts and answers; `-fast` selects their implementation of every test
  // (without it their binary runs NIST's original code). Their P-values equal NIST's (to the
  // last printed digit) but for the longest-run test: their LongestRunOfOnes3 never compares
  // the run that ends a 10,000-bit block, so a few streams in a hundred get another P-value.
  // That is a missing comparison, not missing work, so the timing stands.
  contenders.push({ label: 'Sýs–Říha fast STS assess -fast (1T)', cmd: [path.join(sysRihaDir, 'assess'), String(bits), '-fast'], cwd: sysRihaDir, input: answers, okStatus: 1, check: assessRead(sysRihaDir) });
}

// Wall seconds, and CPU seconds (user + system of the process and its threads, from
// bash's `time`): on a loaded machine the CPU time of a one-thread run is the steadier
// measure of the work, the wall time what a user waits.
function runOnce(c) {
  // The command's own stderr goes to a file; the shell's (`time`'s line) comes back here.
  const script = 'err=$1; shift; TIMEFORMAT="cpu %U %S"; time "$@" >/dev/null 2>"$err"';
  const t0 = process.hrtime.bigint();
  const r = spawnSync('bash', ['-c', script, 'bash', path.join(dir, 'stderr'), ...c.cmd], { cwd: c.cwd, input: c.input ?? '', encoding: 'utf8' });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const m = /cpu ([0-9.]+) ([0-9.]+)/.exec(r.stderr);
  if (r.status !== (c.okStatus ?? 0) || !m) throw new Error(`${c.label} failed (${r.status}): ${fs.readFileSync(path.join(dir, 'stderr'), 'utf8').slice(0, 300)}`);
  return { wall, cpu: Number(m[1]) + Number(m[2]) };
}

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const loadBefore = load();
for (const c of contenders) {  // warm-up: file cache, and fail early
  runOnce(c);
  c.check?.();
}
const times = contenders.map(() => []);
for (let i = 0; i < runs; i++) contenders.forEach((c, j) => times[j].push(runOnce(c)));
const loadAfter = load();

console.log(`qentropy sts through the CLI: ${streams} x ${bits} bits (binary file), ${os.cpus()[0]?.model ?? 'cpu'}, ${os.availableParallelism()} cores, ${nodeLabel(process.execPath)}`);
console.log(`${runs} alternated runs each; load average (1/5/15 min) ${loadBefore} before, ${loadAfter} after`);
console.log('');
console.log(`| ${'contender'.padEnd(56)} | wall min (s) | wall median (s) | cpu min (s) | cpu median (s) |`);
console.log(`|${'-'.repeat(58)}|-------------:|----------------:|------------:|---------------:|`);
const cell = (x, w) => x.toFixed(3).padStart(w);
contenders.forEach((c, j) => {
  const wall = times[j].map((t) => t.wall);
  const cpu = times[j].map((t) => t.cpu);
  console.log(`| ${c.label.padEnd(56)} | ${cell(Math.min(...wall), 12)} | ${cell(median(wall), 15)} | ${cell(Math.min(...cpu), 11)} | ${cell(median(cpu), 14)} |`);
});
fs.rmSync(dir, { recursive: true, force: true });
