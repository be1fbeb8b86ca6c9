// Two KME sites on different Node lines, with requirePostQuantum off: site A in this process,
// site B in a child process on the other runtime (Node 22 ⇄ Node 24/26: every supported line
// negotiates X25519MLKEM768 in TLS, but only from Node 24 does node:crypto have ML-KEM). They
// must agree on the TLS group and on the ratchet, whose ML-KEM-768 is node:crypto at one end
// and @noble/post-quantum at the other.
//
// The other runtime is QENTROPY_OTHER_NODE (npm test sets it from scripts/node-line.sh). When
// it is unset or has the same ML-KEM as this one, site B runs on this runtime and the test
// says so in its title.
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
import { PostgresTestEngine } from './helpers/databases.js';
import { createTestPackage, repoRoot, srcPath, stopChild, type TestPackage } from './helpers/package.js';

interface Runtime {
  node: string;
  version: string;
  /** node:crypto has ML-KEM (Node 24+); without it the ratchet uses @noble/post-quantum. */
  cryptoMlkem: boolean;
}

function probe(node: string): Runtime | undefined {
  if (!fs.existsSync(node)) return undefined;
  const r = spawnSync(node, ['-p', 'JSON.stringify([process.version, typeof require("crypto").encapsulate === "function"])'], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  const [version, cryptoMlkem] = JSON.parse(r.stdout) as [string, boolean];
  return { node, version, cryptoMlkem };
}

const self = probe(process.execPath)!;
const candidate = process.env.QENTROPY_OTHER_NODE ? probe(process.env.QENTROPY_OTHER_NODE) : undefined;
const other = candidate && candidate.cryptoMlkem !== self.cryptoMlkem ? candidate : self;
const expectedGroup = 'X25519MLKEM768';

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
  await stopChild(child);
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
