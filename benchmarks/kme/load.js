// The SAE side of the benchmark, in its own process: CONCURRENCY clients over mTLS with
// keep-alive connections, each issuing requests back to back for SECONDS.
//   node load.js JSON_ARGS
// args: { url, cert, key, ca, op: 'enc'|'dec', peer, number, size, concurrency, seconds, keyIdsFile? }
// Prints one JSON line: { requests, keys, errors, seconds, latenciesMs: {p50, p99}, cpuSeconds } and,
// for 'enc' with keyIdsFile, writes the key IDs made (for a following 'dec' run).
import fs from 'node:fs';

import { Agent, request } from 'undici';

const args = JSON.parse(process.argv[2]);
const agent = new Agent({
  connections: args.concurrency,
  connect: { cert: fs.readFileSync(args.cert), key: fs.readFileSync(args.key), ca: fs.readFileSync(args.ca), minVersion: 'TLSv1.3' },
});

const latencies = [];
let keys = 0;
let errors = 0;
const made = [];
const toRetrieve = args.op === 'dec' ? JSON.parse(fs.readFileSync(args.keyIdsFile, 'utf8')) : [];
let next = 0;

async function one() {
  const t0 = performance.now();
  let body;
  let path;
  if (args.op === 'enc') {
    path = `/api/v1/keys/${args.peer}/enc_keys`;
    body = { number: args.number, size: args.size };
  } else {
    const ids = toRetrieve.slice(next, next + args.number);
    next += args.number;
    if (ids.length === 0) return false;
    path = `/api/v1/keys/${args.peer}/dec_keys`;
    body = { key_IDs: ids.map((key_ID) => ({ key_ID })) };
  }
  const res = await request(`${args.url}${path}`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) {
    errors++;
    if (errors < 4) process.stderr.write(`load: ${res.statusCode} ${text.slice(0, 200)}\n`);
    return true;
  }
  latencies.push(performance.now() - t0);
  const got = JSON.parse(text).keys;
  keys += got.length;
  if (args.op === 'enc' && args.keyIdsFile) for (const k of got) made.push(k.key_ID);
  return true;
}

// Warm the connections (TLS handshakes) before timing: an enc_keys each, or for dec (whose
// key IDs must not be spent) a status request each.
async function status() {
  const res = await request(`${args.url}/api/v1/keys/${args.peer}/status`, { dispatcher: agent });
  await res.body.text();
}
await Promise.all(Array.from({ length: args.concurrency }, () => (args.op === 'enc' ? one() : status())));
latencies.length = 0;
keys = 0;
errors = 0;
made.length = 0;

const start = performance.now();
const cpu0 = process.cpuUsage();
const deadline = start + args.seconds * 1000;
await Promise.all(
  Array.from({ length: args.concurrency }, async () => {
    while (performance.now() < deadline) {
      if (!(await one())) break;
    }
  }),
);
const seconds = (performance.now() - start) / 1000;
const cpu = process.cpuUsage(cpu0);
latencies.sort((a, b) => a - b);
const pct = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] : NaN);
if (args.op === 'enc' && args.keyIdsFile) fs.writeFileSync(args.keyIdsFile, JSON.stringify(made));
process.stdout.write(`${JSON.stringify({ requests: latencies.length, keys, errors, seconds, latenciesMs: { p50: pct(50), p99: pct(99) }, cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`);
await agent.close();
