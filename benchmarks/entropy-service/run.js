// Entropy service vs the ceiling of this runtime (a bare node:http handler returning a
// precomputed body of the same length), for size=1 and size=512, over loopback. Every
// server and the load generator run in separate processes.
//   npm run bench:entropy-service     (builds dist/ first)
//   BENCH_SECONDS=10 BENCH_CONNECTIONS=16 node benchmarks/entropy-service/run.js
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);
const targets = { 1: 0.5, 512: 0.7 };

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

function runLoad(url, tokensFile) {
  return new Promise((resolve, reject) => {
    const args = [path.join(here, 'load.js'), url, String(seconds), String(connections)];
    if (tokensFile) args.push(tokensFile);
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load generator exited ${code}`))));
  });
}

async function measure(mode, size) {
  const tokensFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-bench-tokens-')), 'tokens.json');
  const { child, port } = await startServer(mode === 'ceiling' ? ['ceiling', String(size)] : [mode, String(size), tokensFile]);
  try {
    const result = await runLoad(`http://127.0.0.1:${port}/api/v1/quantum-entropy?size=${size}`, mode === 'ceiling' ? undefined : tokensFile);
    const ok = result['2xx'];
    return {
      rps: ok / result.duration,
      mbps: (ok * size * 1024) / result.duration / 1e6,
      p99: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    fs.rmSync(path.dirname(tokensFile), { recursive: true, force: true });
  }
}

const rows = [];
for (const size of [1, 512]) {
  const ceiling = await measure('ceiling', size);
  const service = await measure('service', size);
  const memory = await measure('service-memory', size);
  rows.push({ size, ceiling, service, memory });
}

const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
console.log(`entropy-service benchmark: ${seconds} s per run, ${connections} connections, loopback HTTP, ${os.cpus().length} CPUs`);
console.log('size | server         |    req/s |    MB/s | p99 ms | non-2xx | ratio to ceiling');
const line = (size, name, r, extra = '') =>
  console.log(
    `${String(size).padStart(4)} | ${name.padEnd(14)} | ${fmt(r.rps).padStart(8)} | ${fmt(r.mbps, 1).padStart(7)} | ${String(r.p99).padStart(6)} | ${String(r.non2xx).padStart(7)} | ${extra}`,
  );
for (const { size, ceiling, service, memory } of rows) {
  const ratio = service.rps / ceiling.rps;
  const verdict = ratio >= targets[size] ? 'meets' : 'BELOW';
  line(size, 'ceiling', ceiling);
  line(size, 'service', service, `${ratio.toFixed(2)} (target >= ${targets[size]}: ${verdict})`);
  line(size, 'service-memory', memory, `${(memory.rps / ceiling.rps).toFixed(2)} (accounts in memory: HTTP + pool + encoder only)`);
}
