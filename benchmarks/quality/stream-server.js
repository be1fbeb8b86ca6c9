// The quality API in this process on a seeded database; fetches the largest failing_logs
// response from a client process of its own (curl-like: node fetch, reading and dropping
// chunks) and reports this process's idle and peak RSS (VmHWM, reset after idling).
//   node --expose-gc stream-server.js FILE N
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

import { load } from './common.js';

const [file, countText] = process.argv.slice(2);
const { openDatabase } = await load('storage/db.js');
const { QualityStore } = await load('quality/store.js');
const { buildQualityApp } = await load('quality/api.js');
const db = await openDatabase({ url: `sqlite:${file}` });
const store = await QualityStore.open(db);
const app = await buildQualityApp({ store, logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${app.server.address().port}/api/v1/failing_logs?num=${countText}&include_random=true&randsize=5242880`;

const status = () => fs.readFileSync('/proc/self/status', 'utf8');
const kb = (name) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status())[1]) * 1024;
// Warm up (JIT, sockets, statement cache) with a small request, then settle.
await fetch(url.replace(/num=\d+/, 'num=1')).then((r) => r.arrayBuffer());
for (let i = 0; i < 3; i++) {
  globalThis.gc?.();
  await new Promise((r) => setTimeout(r, 200));
}
const idleRss = kb('VmRSS');
try {
  fs.writeFileSync('/proc/self/clear_refs', '5'); // reset VmHWM to the current RSS
} catch {
  // not permitted: the peak then includes start-up, an overestimate
}
const t0 = performance.now();
const client = spawn(process.execPath, [fileURLToPath(new URL('./stream-client.js', import.meta.url)), url], { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
client.stdout.on('data', (d) => (out += d));
let sampledPeak = 0;
const sampler = setInterval(() => (sampledPeak = Math.max(sampledPeak, kb('VmRSS'))), 20);
const code = await new Promise((r) => client.on('exit', r));
clearInterval(sampler);
const seconds = (performance.now() - t0) / 1000;
const peakRss = Math.max(kb('VmHWM'), sampledPeak);
const result = JSON.parse(out);
await app.close();
await db.close();
console.log(JSON.stringify({ ...result, valid: code === 0 && result.valid, seconds, idleRss, peakRss }));
