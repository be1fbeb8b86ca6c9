// Post-quantum costs, side by side in one run (docs/post-quantum.md):
//   1. TLS handshakes/s with X25519 against X25519MLKEM768 (full handshakes, ECDSA P-256
//      certificates, one process, this runtime; the hybrid only where OpenSSL has ML-KEM);
//   2. the ratchet's cost per epoch: ML-KEM-768 key generation + encapsulation +
//      decapsulation + the HKDF steps, for each implementation this runtime has;
//   3. enc_keys keys/s at number=1 and 128 with keep-alive connections (benchmarks/kme/run.js):
//      Node 20 classical (this runtime when it is Node 20) against the hybrid runtime given by
//      BENCH_HYBRID_NODE (a node binary) and BENCH_HYBRID_ROOT (a checkout of this commit with
//      dist/ and node_modules built for that Node), once with its default groups and once
//      pinned to X25519, so the TLS group's share is seen apart from the runtime's.
//   npm run build:ts && node benchmarks/kme/pq.js
//   BENCH_HYBRID_NODE=/opt/node26/bin/node BENCH_HYBRID_ROOT=/path/to/checkout-for-26 node benchmarks/kme/pq.js
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';

import { dist } from './dist.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const handshakeSeconds = Number(process.env.BENCH_HANDSHAKE_SECONDS ?? 3);
const epochs = Number(process.env.BENCH_EPOCHS ?? 200);

const { createCertificateAuthority, issueKmeCertificate } = await import(dist('src/pki/certs.js'));
const { hybridAvailable } = await import(dist('src/pqtls/index.js'));
const { negotiatedGroup } = await import(dist('src/pqtls/negotiated.js'));
const { nobleMlKem, nodeMlKem, nodeMlKemAvailable, nextChainSecret, keySecret, confirmation, linkLabel } = await import(dist('src/pqlink/index.js'));

/** Full TLS 1.3 handshakes per second (no session resumption) with `groups` at both ends. */
async function handshakes(groups, cert) {
  const server = tls.createServer({ cert: cert.certPem, key: cert.keyPem, minVersion: 'TLSv1.3', ecdhCurve: groups }, (s) => s.end());
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  let n = 0;
  let group;
  const end = performance.now() + handshakeSeconds * 1000;
  const cpu0 = process.cpuUsage();
  while (performance.now() < end) {
    await new Promise((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ecdhCurve: groups, minVersion: 'TLSv1.3' }, () => {
        group ??= negotiatedGroup(s);
        s.destroy();
        resolve();
      });
      s.on('error', reject);
    });
    n++;
  }
  const cpu = process.cpuUsage(cpu0);
  server.close();
  return { perS: n / handshakeSeconds, cpuMsPer: (cpu.user + cpu.system) / 1000 / n, group };
}

/** One epoch's cryptography at both ends, in ms (mean over `epochs`). */
function ratchetEpoch(leaderKem, followerKem) {
  const link = linkLabel('A', 'B');
  const psk = randomBytes(32);
  let chainA = randomBytes(32);
  let chainB = Buffer.from(chainA);
  const t0 = performance.now();
  for (let e = 1; e <= epochs; e++) {
    const pair = leaderKem.generate();
    const { ciphertext, sharedSecret } = followerKem.encapsulate(pair.encapsulationKey);
    chainB = nextChainSecret(chainB, sharedSecret, psk, e, link);
    const ss = pair.decapsulate(ciphertext);
    chainA = nextChainSecret(chainA, ss, psk, e, link);
    if (confirmation(chainA, e, link) !== confirmation(chainB, e, link)) throw new Error('the two ends disagree');
    keySecret(chainA, e, link);
    keySecret(chainB, e, link);
  }
  return (performance.now() - t0) / epochs;
}

/** Runs benchmarks/kme/run.js (enc_keys only) under `node` from `root`; returns keys/s by operation. */
function encKeys(node, root, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [path.join(root, 'benchmarks', 'kme', 'run.js')], {
      env: { ...process.env, BENCH_OPS: 'enc1,encmax', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`run.js under ${node} exited ${code}`));
      const lines = out.split('\n');
      const rate = (op) => Number(lines.find((l) => l.startsWith(op))?.slice(22).trim().split(/\s+/)[0]);
      // CPU per request of both sites and the SAE process: unlike keys/s, it hardly moves with the machine's load.
      const cpu = (op) => Number(/total ([\d.]+)/.exec(lines.find((l) => l.trim().startsWith(op) && l.includes('total')) ?? '')?.[1]);
      resolve({
        one: rate('enc_keys number=1 '), max: rate('enc_keys number=128'),
        cpuOne: cpu('enc_keys number=1 '), cpuMax: cpu('enc_keys number=128'),
        header: lines.find((l) => l.startsWith('Node ')),
      });
    });
  });
}

const pct = (a, b) => `${a >= b ? '+' : ''}${(((a - b) / b) * 100).toFixed(1)} %`;
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Runs each configuration `rounds` times, interleaved (so a load spike hits all alike); medians. */
async function interleaved(configs) {
  const runs = configs.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (const [i, c] of configs.entries()) runs[i].push(await encKeys(c.node, c.root, c.env));
  }
  return runs.map((rs) => ({
    header: rs[0].header,
    one: median(rs.map((x) => x.one)), max: median(rs.map((x) => x.max)),
    cpuOne: median(rs.map((x) => x.cpuOne)), cpuMax: median(rs.map((x) => x.cpuMax)),
    spread: `number=1 ${Math.min(...rs.map((x) => x.one)).toFixed(0)}–${Math.max(...rs.map((x) => x.one)).toFixed(0)}, number=128 ${Math.min(...rs.map((x) => x.max)).toFixed(0)}–${Math.max(...rs.map((x) => x.max)).toFixed(0)}`,
  }));
}

function show(r) {
  console.log(`  ${r.header}`);
  console.log(`      keys/s (median) number=1 ${r.one.toFixed(0)}, number=128 ${r.max.toFixed(0)} (range ${r.spread}); CPU ms per request number=1 ${r.cpuOne.toFixed(3)}, number=128 ${r.cpuMax.toFixed(3)}`);
}

async function main() {
  console.log(`post-quantum costs: Node ${process.version}, OpenSSL ${process.versions.openssl}, ${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const ca = await createCertificateAuthority();
  const cert = await issueKmeCertificate(ca, { kmeId: 'A', hosts: ['127.0.0.1'] });

  console.log(`\n1. TLS 1.3 full handshakes, both ends in this process, ${handshakeSeconds} s each`);
  const classical = await handshakes('X25519', cert);
  console.log(`  X25519           ${classical.perS.toFixed(0).padStart(6)} handshakes/s  ${classical.cpuMsPer.toFixed(2)} ms CPU each (negotiated ${classical.group})`);
  if (hybridAvailable()) {
    const hybrid = await handshakes('X25519MLKEM768', cert);
    console.log(`  X25519MLKEM768   ${hybrid.perS.toFixed(0).padStart(6)} handshakes/s  ${hybrid.cpuMsPer.toFixed(2)} ms CPU each (negotiated ${hybrid.group}); CPU per handshake ${pct(hybrid.cpuMsPer, classical.cpuMsPer)} against X25519`);
  } else {
    console.log('  X25519MLKEM768   not available on this runtime (OpenSSL 3.0): run under Node 22.20+, 24 or 26');
  }

  console.log(`\n2. ratchet, one epoch at both ends (ML-KEM-768 keygen + encaps + decaps, 2 HKDF chain steps, confirmation, key secrets), mean of ${epochs}`);
  const impls = [['@noble/post-quantum', nobleMlKem()], ...(nodeMlKemAvailable() ? [['node:crypto', nodeMlKem()]] : [])];
  for (const [leaderName, leader] of impls) {
    for (const [followerName, follower] of impls) {
      console.log(`  leader ${leaderName.padEnd(20)} follower ${followerName.padEnd(20)} ${ratchetEpoch(leader, follower).toFixed(3)} ms per epoch`);
    }
  }
  console.log('  on the link: 2 inter-KME calls per epoch (offer with a 1,184-byte key, answer with a 1,088-byte ciphertext; commit), and 2 sealed state writes per site');
  if (process.env.BENCH_PART === 'micro') return;

  const hybridNode = process.env.BENCH_HYBRID_NODE;
  const hybridRoot = process.env.BENCH_HYBRID_ROOT;
  if (hybridNode && hybridRoot) {
    // Parts 1 and 2 again under the hybrid runtime, for its ML-KEM group and node:crypto's ML-KEM.
    console.log(`\n--- parts 1 and 2 under ${hybridNode}`);
    await new Promise((resolve, reject) => {
      const child = spawn(hybridNode, [path.join(hybridRoot, 'benchmarks', 'kme', 'pq.js')], { env: { ...process.env, BENCH_PART: 'micro' }, stdio: ['ignore', 'inherit', 'inherit'] });
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`pq.js under ${hybridNode} exited ${code}`))));
    });
    console.log('---');
  }
  console.log(`\n3. enc_keys keys/s, keep-alive connections (benchmarks/kme/run.js), ${rounds} interleaved rounds, medians`);
  const root = path.resolve(here, '..', '..');
  const configs = [
    { node: process.execPath, root, env: { BENCH_RATCHET: 'off' } },
    { node: process.execPath, root, env: {} },
    ...(hybridNode && hybridRoot ? [{ node: hybridNode, root: hybridRoot, env: { BENCH_TLS_GROUPS: 'X25519' } }, { node: hybridNode, root: hybridRoot, env: {} }] : []),
  ];
  const [noRatchet, base, pinned, hybrid] = await interleaved(configs);
  for (const r of [noRatchet, base, pinned, hybrid]) if (r) show(r);
  const compare = (what, a, b) =>
    console.log(`  ${what.padEnd(44)} keys/s number=1 ${pct(a.one, b.one)}, number=128 ${pct(a.max, b.max)}; CPU per request number=1 ${pct(a.cpuOne, b.cpuOne)}, number=128 ${pct(a.cpuMax, b.cpuMax)}`);
  compare('ratchet on against off (this runtime):', base, noRatchet);
  if (!hybrid) {
    console.log('  (set BENCH_HYBRID_NODE and BENCH_HYBRID_ROOT for the hybrid runtime side by side)');
    return;
  }
  compare('Node 26 hybrid against this runtime:', hybrid, base);
  compare('hybrid against X25519 on the hybrid runtime:', hybrid, pinned);
  console.log('  goal: the hybrid costs no more than 10 % of keys/s');
}

await main();
