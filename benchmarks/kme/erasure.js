// What erasure on disk costs the KME (issue 26 item 2): enc_keys number=1 and dec_keys
// number=1 end to end (benchmarks/kme/run.js), run for a baseline build and for this
// checkout in alternation, so both see the same machine load; prints each round and the
// median ratio. dec_keys is where the cost is: each retrieval waits for a scrub (checkpoint
// + WAL truncate), shared by the retrievals that arrive meanwhile.
//   BASELINE_DIST=/path/to/baseline/dist node benchmarks/kme/erasure.js
//   (BENCH_ROUNDS, default 3; BENCH_SECONDS and BENCH_CONCURRENCY as for run.js)
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const baseline = process.env.BASELINE_DIST;
if (!baseline) throw new Error('set BASELINE_DIST to the dist/ of the build to compare with');
const candidate = process.env.QENTROPY_DIST ?? path.resolve(here, '../../dist');
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const OPS = ['enc_keys number=1', 'dec_keys number=1'];

/** One run.js run against `dist`; keys/s by operation. */
function runOnce(dist) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(here, 'run.js')], {
      env: { ...process.env, QENTROPY_DIST: dist, BENCH_OPS: 'enc1,dec1' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`run.js exited ${code}:\n${out}`));
      const rates = {};
      const lines = out.split('\n');
      for (const op of OPS) {
        const line = lines.find((l) => l.startsWith(op));
        rates[op] = line ? Number(line.slice(22).trim().split(/\s+/)[0]) : NaN;
        // CPU ms per request of both sites together (run.js's "CPU per request" lines): far
        // less sensitive to the machine's load than keys/s.
        const cpu = lines.find((l) => l.trim().startsWith(op) && l.includes(' A ') && l.includes(' B '));
        const m = cpu?.match(/ A (\S+)\s+B (\S+)/);
        rates[`${op} cpu`] = m ? Number(m[1]) + Number(m[2]) : NaN;
      }
      resolve(rates);
    });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = { baseline: [], candidate: [] };
for (let r = 0; r < rounds; r++) {
  // Alternate which goes first, so neither always runs on a warmer (or busier) machine.
  const order = r % 2 === 0 ? ['baseline', 'candidate'] : ['candidate', 'baseline'];
  for (const which of order) {
    const rates = await runOnce(which === 'baseline' ? baseline : candidate);
    results[which].push(rates);
    console.log(`round ${r + 1} ${which.padEnd(9)} ${OPS.map((op) => `${op}: ${rates[op].toFixed(0)} keys/s, sites ${rates[`${op} cpu`].toFixed(3)} CPU ms/req`).join('; ')}  (load ${os.loadavg()[0].toFixed(1)})`);
  }
}
console.log(`\nmedian of ${rounds} rounds (keys/s), baseline ${baseline} vs ${candidate}:`);
for (const op of OPS) {
  const b = median(results.baseline.map((x) => x[op]));
  const c = median(results.candidate.map((x) => x[op]));
  const ratios = results.candidate.map((x, i) => x[op] / results.baseline[i][op]);
  console.log(`  ${op.padEnd(20)} baseline ${b.toFixed(0).padStart(6)}  this ${c.toFixed(0).padStart(6)}  ratio per round ${ratios.map((x) => x.toFixed(2)).join(' ')}  median ${median(ratios).toFixed(2)}`);
  const cb = median(results.baseline.map((x) => x[`${op} cpu`]));
  const cc = median(results.candidate.map((x) => x[`${op} cpu`]));
  console.log(`  ${''.padEnd(20)} sites' CPU ms per request: baseline ${cb.toFixed(3)}  this ${cc.toFixed(3)}  (${((cc / cb - 1) * 100).toFixed(0)} %)`);
}
