// Where a process's CPU went, from a V8 .cpuprofile (`node --cpu-prof`), in the buckets the
// KME throughput question needs (issue 29 item 8): self time by what the code belongs to.
//   BENCH_SITE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" BENCH_OPS=enc1 node benchmarks/kme/run.js
//   node benchmarks/kme/profile-summary.js /tmp/prof/*.cpuprofile
// SKIP_SECONDS=N leaves out the first N seconds of each profile (start-up and warm-up).
// Native work run from a JS frame (OpenSSL inside a socket write, SQLite inside a statement)
// counts to that frame's bucket; native work the event loop starts by itself (TLS decryption
// of an arriving record, libuv) shows as "(program)".
import fs from 'node:fs';

/** First matching rule names the bucket of a frame's self time. */
const buckets = [
  ['idle', (f) => f.functionName === '(idle)'],
  ['GC', (f) => f.functionName === '(garbage collector)'],
  ['(program): native outside JS (TLS records, libuv)', (f) => f.functionName === '(program)'],
  ['SQLite (better-sqlite3 + storage layer)', (f) => /better-sqlite3|\/storage\//.test(f.url) || /^(run|all|get|prepare|exec|iterate)$/.test(f.functionName) && f.url === ''],
  ['fsync / file flush', (f) => /fsync|fdatasync/i.test(f.functionName)],
  ['Fastify, its router, JSON schema, pino', (f) => /node_modules\/(fastify|@fastify|find-my-way|avvio|light-my-request|fast-json-stringify|fast-uri|ajv|secure-json-parse|pino|sonic-boom|thread-stream|fast-redact|on-exit-leak-free|abstract-logging|process-warning|rfdc|toad-cache|fast-querystring|fast-content-type-parse|content-type)/.test(f.url)],
  ['undici (inter-KME client)', (f) => /node_modules\/undici/.test(f.url)],
  ['TLS / net / http (node core)', (f) => /node:(_tls|tls|net|_http|http|https|stream|internal\/(stream|streams|tls|net|http|js_stream))/.test(f.url) || /^(writev|writeBuffer|writeUtf8String|writeLatin1String|onStreamRead|onread|readStart|readStop|shutdown|getPeerCertificate|verifyError)$/.test(f.functionName)],
  ['crypto (HKDF, AES-GCM, HMAC, random, UUID)', (f) => /node:internal\/crypto|node:crypto/.test(f.url) || /^(hkdfSync|randomFillSync|randomUUID|update|final|digest|createCipheriv|createDecipheriv)$/.test(f.functionName)],
  ['JSON (parse / stringify)', (f) => /^(parse|stringify)$/.test(f.functionName) && f.url === ''],
  ['KME code (dist/src/kme)', (f) => /\/src\/kme\//.test(f.url)],
  ['other qentropy code (dist/src)', (f) => /\/dist\/src\//.test(f.url)],
  ['node core, other (promises, timers, events, buffers)', (f) => /^node:/.test(f.url) || f.url === ''],
];

function summarize(file) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  const dt = profile.timeDeltas;
  const skipUs = Number(process.env.SKIP_SECONDS ?? 0) * 1e6;
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += dt[i] ?? 0;
    if (at < skipUs) continue;
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) ?? 0) + (dt[i + 1] ?? 0));
  }
  const totals = new Map();
  let all = 0;
  let busy = 0;
  for (const [id, us] of selfUs) {
    const f = byId.get(id).callFrame;
    const name = buckets.find(([, test]) => test(f))?.[0] ?? 'other';
    totals.set(name, (totals.get(name) ?? 0) + us);
    all += us;
    if (name !== 'idle') busy += us;
  }
  console.log(`\n${file}: ${(all / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s busy (not idle)`);
  for (const [name, us] of [...totals].sort((a, b) => b[1] - a[1])) {
    if (name === 'idle') continue;
    console.log(`  ${((us / busy) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`);
  }
  return { busy, totals };
}

for (const file of process.argv.slice(2)) summarize(file);
