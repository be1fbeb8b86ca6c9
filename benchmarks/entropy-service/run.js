// Entropy service vs the ceiling of this runtime (a bare node:http handler returning a
// precomputed body of the same length), for size=1 and size=512, over loopback. Every
// server and the load generator run in separate processes.
//   npm run bench:entropy-service     (builds dist/ first)
//   BENCH_SECONDS=10 BENCH_CONNECTIONS=16,64 BENCH_RUNS=3 BENCH_SIZES=1,512 node benchmarks/entropy-service/run.js
// Every size is measured at each connection count (default 16 and 64), each against the
// ceiling at the same count: with few connections a request's wait for its durable commit
// (the SQLite WAL flush) limits throughput, with more the flush is shared by more requests.
// With BENCH_RUNS > 1 every row is measured that many times (the machine may be shared, so
// one figure can mislead) and a summary gives each ratio's range.
// Every server first takes BENCH_WARMUP_SECONDS (default 3) of the same load, untimed: the
// service's code (Fastify, the accounts, SQLite) is still being compiled for seconds after
// start, the ceiling's few lines are not, and a short run measured mostly the compiler
// (2 s runs: 0.33-0.73 of the ceiling without warm-up).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const connectionCounts = (process.env.BENCH_CONNECTIONS ?? '16,64').split(',').map(Number);
const runs = Number(process.env.BENCH_RUNS ?? 1);
const sizes = (process.env.BENCH_SIZES ?? '1,512').split(',').map(Number);
const targets = { 1: 0.5, 512: 0.7 };
// At size=1 the source costs nothing worth measuring (1 KiB a request); at size=512 the
// pre-filled pool separates the server's own work from generating 512 KiB of CSPRNG output
// per request on the same cores.
// BENCH_MODES (comma-separated) picks some of them.
const chosenModes = process.env.BENCH_MODES?.split(',');
const modesFor = (size) =>
  (size >= 64 ? ['service', 'service-prefilled', 'service-device', 'service-memory'] : ['service', 'service-memory']).filter(
    (m) => !chosenModes || chosenModes.includes(m),
  );
const notes = {
  service: `as deployed: durable accounts on ${process.env.BENCH_STORAGE_URL ? 'PostgreSQL' : 'SQLite'}, getrandom filler running`,
  'service-prefilled': 'same, pool filled before the run (no source cost)',
  'service-memory': 'accounts in memory: HTTP + pool + encoder only',
  'service-device': 'pool filled by device: on a FIFO fed by a generator process, through the health gate',
};

function startServer(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(here, 'server.js'), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.on('exit', (code) => reject(new Error(`server exited (${code}) before listening`)));
  });
}

function runLoad(url, tokensFile, connections, duration = seconds) {
  return new Promise((resolve, reject) => {
    const args = [path.join(here, 'load.js'), url, String(duration), String(connections)];
    if (tokensFile) args.push(tokensFile);
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load generator exited ${code}`))));
  });
}

async function measure(mode, size, connections) {
  const tokensFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-bench-tokens-')), 'tokens.json');
  const { child, port } = await startServer(mode === 'ceiling' ? ['ceiling', String(size)] : [mode, String(size), tokensFile]);
  try {
    const url = `http://127.0.0.1:${port}/api/v1/quantum-entropy?size=${size}`;
    const tokens = mode === 'ceiling' ? undefined : tokensFile;
    if (warmupSeconds > 0) await runLoad(url, tokens, connections, warmupSeconds);
    const result = await runLoad(url, tokens, connections);
    const ok = result['2xx'];
    return {
      rps: ok / result.duration,
      mbps: (ok * size * 1024) / result.duration / 1e6,
      p99: result.latency.p99,
      non2xx: result.non2xx,
      // Which statuses the non-2xx were (503: the pool ran dry; 429: a token's rate limit).
      statuses: Object.entries(result.statusCodeStats ?? {})
        .filter(([code]) => !code.startsWith('2'))
        .map(([code, { count }]) => `${code}: ${count}`)
        .join(', '),
      errors: result.errors + result.timeouts,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    fs.rmSync(path.dirname(tokensFile), { recursive: true, force: true });
  }
}

const load = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');
const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
console.log(
  `entropy-service benchmark: ${seconds} s per run after ${warmupSeconds} s of warm-up, ${connectionCounts.join(' and ')} connections, loopback HTTP, ${os.cpus().length} CPUs, ${runs} run(s)`,
);
console.log(`load average at start: ${load()}`);
console.log('run | size | conns | server            |    req/s |    MB/s | p99 ms | non-2xx | ratio to ceiling');
const line = (run, size, connections, name, r, extra = '') =>
  console.log(
    `${String(run).padStart(3)} | ${String(size).padStart(4)} | ${String(connections).padStart(5)} | ${name.padEnd(17)} | ${fmt(r.rps).padStart(8)} | ${fmt(r.mbps, 1).padStart(7)} | ${String(r.p99).padStart(6)} | ${String(r.non2xx).padStart(7)} | ${extra}${r.statuses ? `  [${r.statuses}]` : ''}`,
  );
const ratios = {};
for (let run = 1; run <= runs; run++) {
  for (const size of sizes) {
    for (const connections of connectionCounts) {
      const ceiling = await measure('ceiling', size, connections);
      line(run, size, connections, 'ceiling', ceiling, `(load ${load()})`);
      for (const mode of modesFor(size)) {
        const r = await measure(mode, size, connections);
        const ratio = r.rps / ceiling.rps;
        // A pre-filled pool that ran dry answered the rest of the run with quick 503s, so its
        // rate is not the server's: say so instead of giving a verdict.
        const dry = mode === 'service-prefilled' && r.non2xx > 0;
        if (!dry) (ratios[`${size} x${connections} ${mode}`] ??= []).push({ ratio, p99: r.p99, ceilingP99: ceiling.p99 });
        const verdict =
          mode === 'service-memory'
            ? ''
            : dry
              ? ' (NOT VALID: the pool ran dry; raise BENCH_PREFILL_MIB)'
              : ` (target >= ${targets[size]}: ${ratio >= targets[size] ? 'meets' : 'BELOW'})`;
        line(run, size, connections, mode, r, `${ratio.toFixed(2)}${verdict}  ${notes[mode]}`);
      }
    }
  }
}
console.log(`load average at end: ${load()}`);
if (runs > 1) {
  console.log('\nsummary: ratio to the ceiling of the same run, min-max (median); p99 ms min-max, ceiling p99 in brackets');
  for (const [key, list] of Object.entries(ratios)) {
    const rs = list.map((x) => x.ratio).sort((a, b) => a - b);
    const ps = list.map((x) => x.p99).sort((a, b) => a - b);
    const cs = list.map((x) => x.ceilingP99).sort((a, b) => a - b);
    console.log(
      `  size ${key.padEnd(30)} ${rs[0].toFixed(2)}-${rs.at(-1).toFixed(2)} (${rs[rs.length >> 1].toFixed(2)})   p99 ${ps[0]}-${ps.at(-1)} [${cs[0]}-${cs.at(-1)}]`,
    );
  }
}
