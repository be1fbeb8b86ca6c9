// Quality benchmarks (issue 5):
//  1. One default run (100 x 10^6 bits: draw, battery, record, store) with 1 thread and
//     with the worker count (default: every core), wall time, CPU time, and the share of
//     the 10-minute period it takes. Target: well under 60 s on one core.
//  2. Peak memory of the largest failing_logs response (100 records x 5,242,880 bits,
//     ~500 MB of JSON) in a server process of its own, above its idle RSS. Target: < 64 MiB.
//
//   npm run build:ts && node benchmarks/quality/run.js [--streams 100] [--bits 1000000] [--threads N] [--skip-run] [--skip-memory]
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { load } from './common.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const streams = arg('streams', 100);
const bits = arg('bits', 1_000_000);
const workers = arg('threads', os.availableParallelism());
const period = 600;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-bench-quality-'));

async function oneRun(threads) {
  const { openDatabase } = await load('storage/db.js');
  const { QualityStore } = await load('quality/store.js');
  const { QualityRunner } = await load('quality/run.js');
  const { OwnPoolSource } = await load('quality/sources.js');
  const { GetrandomSource } = await load('sources/index.js');
  const db = await openDatabase({ url: `sqlite:${path.join(tmp, `run-${threads}.db`)}` });
  const store = await QualityStore.open(db);
  // The OS generator through a pool, as a daemon without a hardware source would draw.
  const source = new OwnPoolSource(new GetrandomSource(), { capacity: 16 * 1024 * 1024 });
  const runner = new QualityRunner({ store, source, streams, bitsPerStream: bits, threads });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const outcome = await runner.run();
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const report = await store.getReport(outcome.id);
  await source.close();
  await db.close();
  return {
    threads,
    wall,
    cpu: (cpu.user + cpu.system) / 1e6,
    draw: report.timings ? report.timings.drawMs / 1000 : NaN,
    battery: report.timings ? report.timings.batteryMs / 1000 : NaN,
    passed: outcome.status === 'completed' ? outcome.record.tests_passed : `error: ${outcome.error}`,
  };
}

function childJson(script, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', path.join(here, script), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: process.env });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`${script} exited ${code}`))));
  });
}

const mib = (b) => (b / 1024 / 1024).toFixed(1);

console.log(`# quality benchmark: ${os.cpus()[0]?.model ?? 'cpu'} x ${os.availableParallelism()}, node ${process.version}, load average ${os.loadavg()[0].toFixed(1)}`);
// On a shared machine wall time includes waiting for a core; CPU time (all threads of this
// process) is what a run costs, and on an idle machine wall ~ CPU / threads.
if (!argv.includes('--skip-run')) {
  console.log(`\n## one run: ${streams} x ${bits} bits (target: well under 60 s on one core; period ${period} s)\n`);
  console.log('| threads | wall s | CPU s | draw s | battery s | wall share of 10 min | CPU share of 10 min (one core) | tests_passed |');
  console.log('|--------:|-------:|------:|-------:|----------:|---------------------:|-------------------------------:|:-------------|');
  for (const threads of [...new Set([1, workers])]) {
    const r = await oneRun(threads);
    console.log(
      `| ${r.threads} | ${r.wall.toFixed(1)} | ${r.cpu.toFixed(1)} | ${r.draw.toFixed(1)} | ${r.battery.toFixed(1)} | ${((100 * r.wall) / period).toFixed(1)} % | ${((100 * r.cpu) / period).toFixed(1)} % | ${r.passed} |`,
    );
  }
}
if (!argv.includes('--skip-memory')) {
  const dbFile = path.join(tmp, 'stream.db');
  await childJson('seed.js', [dbFile, '100']);
  const m = await childJson('stream-server.js', [dbFile, '100']);
  console.log('\n## largest failing_logs response: 100 records x 5,242,880 bits, streamed (target: peak < 64 MiB above idle)\n');
  console.log('| response MB | seconds | MB/s | idle RSS MiB | peak RSS MiB | peak above idle MiB | target |');
  console.log('|------------:|--------:|-----:|-------------:|-------------:|--------------------:|-------:|');
  console.log(
    `| ${(m.bytes / 1e6).toFixed(1)} | ${m.seconds.toFixed(2)} | ${(m.bytes / 1e6 / m.seconds).toFixed(0)} | ${mib(m.idleRss)} | ${mib(m.peakRss)} | ${mib(m.peakRss - m.idleRss)} | < 64 |`,
  );
  if (!m.valid) console.log('\nWARNING: the response did not check out (see stream-server.js)');
}
fs.rmSync(tmp, { recursive: true, force: true });
