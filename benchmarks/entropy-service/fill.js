// The fill path of the entropy service with a raw source (hwrng, a QRNG device, a FIFO):
// raw bytes -> health gate -> pool, as the role runs it (PoolFiller, 64 KiB reads). The raw
// source hands out copies of pre-made random data, so the figures are the gate's and the
// filler's own cost, not a device's. Compares this build with another one, side by side in
// one run, each in its own process, alternating:
//   npm run build:ts && BENCH_BASELINE_DIST=/path/to/other/dist node benchmarks/entropy-service/fill.js
// BENCH_BASELINE_DIST: the dist/ of the baseline (e.g. `git archive main` built with tsc);
// QENTROPY_ADDON_PATH makes both use one addon. BENCH_MIB (default 64) per run, BENCH_RUNS (3).
// BENCH_SOURCE=fifo: the raw source is instead a real `device:` source (DeviceSource) on a
// FIFO that a generator process writes random bytes into as fast as it can (issue 30);
// BENCH_CHUNK sets the filler's read size (default: what the role uses for the source, its
// preferredReadBytes or 64 KiB; for a FIFO each build's own `device:` default).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { startFifoGenerator } from './fifo.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const mib = Number(process.env.BENCH_MIB ?? 64);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const fromFifo = process.env.BENCH_SOURCE === 'fifo';
const chunk = process.env.BENCH_CHUNK ? Number(process.env.BENCH_CHUNK) : undefined;

// A FIFO in a temp dir, with its generator process.
function startFifo() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-fifo-'));
  const generator = startFifoGenerator(dir);
  return {
    fifo: generator.fifo,
    stop() {
      generator.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function measure(dist) {
  const load = (p) => import(pathToFileURL(path.join(dist, p)).href);
  const { EntropyPool, PoolFiller } = await load('src/pool/index.js');
  const { HealthGatedSource, createSource, parseSourceSpec } = await load('src/sources/index.js');
  const { createNativeTester } = await load('src/sources/native-tester.js');
  // 16 MiB of random bytes with no run of 4 equal bytes (at H = 7.5 the RCT drops a block
  // holding one, about once per 16 MiB, which would only add noise to the figure).
  const data = crypto.randomBytes(16 * 1024 * 1024);
  for (let i = 3; i < data.length; i++) {
    if (data[i] === data[i - 1] && data[i] === data[i - 2] && data[i] === data[i - 3]) data[i] ^= 1;
  }
  let offset = 0;
  const raw = {
    name: 'device:bench',
    development: false,
    async read(n) {
      if (offset + n > data.length) offset = 0;
      const out = Buffer.from(data.subarray(offset, offset + n));
      offset += n;
      return out;
    },
    async close() {},
  };
  const fifo = fromFifo ? startFifo() : undefined;
  // The FIFO as the role builds a `device:` source (each build's own read size and pipe).
  const source = fifo
    ? createSource(parseSourceSpec(`device:${fifo.fifo}`), { createTester: () => createNativeTester(7.5) })
    : new HealthGatedSource(raw, { tester: createNativeTester(7.5) });
  const pool = new EntropyPool({ capacity: mib * 1024 * 1024 });
  const filler = new PoolFiller(pool, source, chunk ? { chunkSize: chunk } : {});
  const readBytes = chunk ?? source.preferredReadBytes ?? 64 * 1024;
  if (fifo) {
    // Start-up tests and the first reads before the clock starts.
    await source.read(readBytes);
  }
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  filler.start();
  await pool.waitForLevel(pool.capacity);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  await filler.stop();
  await source.close();
  fifo?.stop();
  const health = source.health();
  if (health.state === 'failed') throw new Error(`source failed: ${health.message}`);
  const kib = pool.level / 1024;
  return { mbPerS: pool.level / 1e6 / seconds, cpuUsPerKiB: (used.user + used.system) / kib, blocksFailed: health.blocksFailed, readKiB: readBytes / 1024 };
}

function child(dist) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', dist], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child for ${dist} exited ${code}`))));
  });
}

if (process.argv[2] === '--child') {
  process.stdout.write(JSON.stringify(await measure(process.argv[3])));
} else {
  const contenders = [['this build', path.resolve(here, '../../dist')]];
  if (process.env.BENCH_BASELINE_DIST) contenders.unshift(['baseline', path.resolve(process.env.BENCH_BASELINE_DIST)]);
  const results = new Map(contenders.map(([name]) => [name, []]));
  for (let run = 0; run < runs; run++) {
    for (const [name, dist] of contenders) results.get(name).push(await child(dist));
  }
  console.log(
    `fill path, ${mib} MiB per run, ${runs} runs, ${fromFifo ? 'from a FIFO (device: source) ' : ''}through the health gate into the pool; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`,
  );
  console.log('| build | read KiB | MB/s per run | CPU µs per KiB per run | blocks failed |');
  console.log('|---|---|---|---|---|');
  for (const [name, rows] of results) {
    const fmt = (f, d) => rows.map((r) => r[f].toFixed(d)).join(' · ');
    console.log(`| ${name} | ${rows[0].readKiB} | ${fmt('mbPerS', 1)} | ${fmt('cpuUsPerKiB', 1)} | ${rows.map((r) => r.blocksFailed).join(' · ')} |`);
  }
}
