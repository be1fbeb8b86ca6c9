// kme.requirePostQuantum refuses during the TLS handshake, with an alert the client sees,
// not by resetting a finished connection (issue 29 item 7). The site runs on a runtime
// whose OpenSSL has ML-KEM: this one when it has it, else Node 26 in a child process
// (QENTROPY_OTHER_NODE, else scripts/node-line.sh 26), on PostgreSQL so the child needs no
// SQLite addon for its Node line. The classical clients are this process's Node (on Node
// 26 told to offer X25519 only) and `openssl s_client -groups X25519`.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect } from 'node:tls';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createCertificateAuthority, issueKmeCertificate, issueSaeCertificate } from '../src/pki/certs.js';
import { hybridAvailable } from '../src/pqtls/index.js';
import { PostgresTestEngine } from './helpers/databases.js';
import { freePort } from './helpers/net.js';
import { createTestPackage, srcPath, stopChild, type TestPackage } from './helpers/package.js';

/** A Node binary whose OpenSSL has ML-KEM, or undefined when none can be found here. */
function hybridNode(): string | undefined {
  if (hybridAvailable()) return process.execPath;
  const candidates = [process.env.QENTROPY_OTHER_NODE, spawnSync('bash', ['scripts/node-line.sh', '26'], { encoding: 'utf8' }).stdout?.trim()];
  return candidates.find((node): node is string => {
    if (!node || !fs.existsSync(node)) return false;
    const probe = spawnSync(node, ['-e', 'require("tls").createSecureContext({ ecdhCurve: "X25519MLKEM768" })']);
    return probe.status === 0;
  });
}

const node = hybridNode();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-kme-pq-handshake-'));
const file = (name: string): string => path.join(dir, name);
const pg = new PostgresTestEngine(process.env.QENTROPY_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
let pkg: TestPackage;
let entry = '';
let child: ChildProcess | undefined;
let port = 0;
const logLines: Array<Record<string, unknown>> = [];

/** The site's `kme` section with requirePostQuantum and the given groups. */
const kmeSection = (groups: string, listenPort = 0): Record<string, unknown> => ({
  id: 'P',
  listen: { host: '127.0.0.1', port: listenPort },
  tls: { cert: file('kme-P.crt'), key: file('kme-P.key'), ca: file('ca.crt'), groups },
  requirePostQuantum: true,
  storage: pg.isolatedUrl,
  siteKeyFile: file('site-P.key'),
  seedSource: 'system',
});

describe.skipIf(node === undefined)(`kme.requirePostQuantum at the handshake (site on ${node ?? 'no runtime with ML-KEM found'})`, () => {
  beforeAll(async () => {
    await pg.setup();
    const ca = await createCertificateAuthority();
    fs.writeFileSync(file('ca.crt'), ca.certPem);
    const kme = await issueKmeCertificate(ca, { kmeId: 'P', hosts: ['127.0.0.1'] });
    fs.writeFileSync(file('kme-P.crt'), kme.certPem);
    fs.writeFileSync(file('kme-P.key'), kme.keyPem, { mode: 0o600 });
    const sae = await issueSaeCertificate(ca, { saeId: 'p1', site: 'P' });
    fs.writeFileSync(file('p1.crt'), sae.certPem);
    fs.writeFileSync(file('p1.key'), sae.keyPem, { mode: 0o600 });

    pkg = createTestPackage('kme-pq-handshake');
    // The site logs JSON lines on stdout; `check` only parses a config and prints the verdict.
    entry = pkg.bundle(
      'kme-site.js',
      `import fs from 'node:fs';
import { parseKmeConfig } from ${JSON.stringify(srcPath('config/sections/kme.ts'))};
import { KmeSite } from ${JSON.stringify(srcPath('kme/site.ts'))};
import { systemSeedSource } from ${JSON.stringify(srcPath('kme/seed-source.ts'))};
const raw = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
if (process.argv[2] === 'check') {
  try { parseKmeConfig(raw); console.log('accepted'); } catch (err) { console.log(err.message); }
  process.exit(0);
}
const line = (level) => (obj, msg) => console.log(JSON.stringify({ ...obj, level, msg }));
const logger = { info: line('info'), warn: line('warn'), error: line('error'), debug: () => undefined };
const site = await KmeSite.create(parseKmeConfig(raw), { seedSource: systemSeedSource(), logger });
await site.start();
console.log(JSON.stringify({ ready: true }));
process.on('SIGTERM', () => void site.stop().then(() => process.exit(0)));
`,
    );
    port = await freePort();
    fs.writeFileSync(file('p.json'), JSON.stringify(kmeSection('X25519MLKEM768:X25519:P-256', port)));
    child = spawn(node!, [entry, 'run', file('p.json')], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      let pending = '';
      child!.stdout!.on('data', (d: Buffer) => {
        pending += d.toString();
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const l of lines) {
          const parsed = JSON.parse(l) as Record<string, unknown>;
          logLines.push(parsed);
          if (parsed.ready) resolve();
        }
      });
      child!.on('exit', (code) => reject(new Error(`the site exited with ${code}`)));
    });
  }, 120_000);

  afterAll(async () => {
    await stopChild(child);
    pkg?.remove();
    await pg.teardown();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a classical client gets a handshake_failure alert (Node and openssl s_client), and the site logs what it accepts', async () => {
    const nodeError = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      const socket = connect({
        host: '127.0.0.1',
        port,
        cert: fs.readFileSync(file('p1.crt')),
        key: fs.readFileSync(file('p1.key')),
        ca: fs.readFileSync(file('ca.crt')),
        ...(hybridAvailable() ? { ecdhCurve: 'X25519' } : {}),
      });
      socket.on('error', resolve);
      socket.on('secureConnect', () => {
        // Before the fix the handshake finished and the server reset the connection.
        socket.destroy();
        resolve(undefined);
      });
    });
    // OpenSSL 3.0 (Node 22) names the alert SSLV3_..., OpenSSL 3.5 (Node 24, 26) SSL/TLS_....
    expect(nodeError?.code).toMatch(/^ERR_SSL_(SSLV3|SSL\/TLS)_ALERT_HANDSHAKE_FAILURE$/);

    const sClient = await new Promise<string>((resolve) => {
      const c = execFile(
        'openssl',
        ['s_client', '-connect', `127.0.0.1:${port}`, '-groups', 'X25519', '-tls1_3', '-cert', file('p1.crt'), '-key', file('p1.key'), '-CAfile', file('ca.crt')],
        { timeout: 20_000 },
        (_err, out, errOut) => resolve(`${out}\n${errOut}`),
      );
      c.stdin!.end('GET /api/v1/keys/P/status HTTP/1.1\r\nHost: p\r\n\r\n');
    });
    expect(sClient).toMatch(/alert handshake failure/);

    // Wait for the site's log lines of both refusals (they are written as they happen).
    await expect.poll(() => logLines.filter((l) => l.level === 'warn' && /handshake refused/.test(String(l.msg))).length, { timeout: 20_000 }).toBe(2);
    expect(logLines.find((l) => /handshake refused/.test(String(l.msg)))).toMatchObject({ face: 'kme-sae', accepted: 'X25519MLKEM768', reason: 'ERR_SSL_NO_SUITABLE_KEY_SHARE' });
  });

  it('pure ML-KEM (MLKEM768) under requirePostQuantum is refused at config load, as it would never be offered', () => {
    for (const groups of ['MLKEM768', 'MLKEM768:X25519MLKEM768']) {
      fs.writeFileSync(file('check.json'), JSON.stringify(kmeSection(groups)));
      const out = spawnSync(node!, [entry, 'check', file('check.json')], { encoding: 'utf8' });
      expect(out.stdout).toMatch(/^kme\.tls\.groups: /);
      expect(out.stdout).toMatch(/post-quantum hybrid group|MLKEM768 is post-quantum but not hybrid/);
    }
    fs.writeFileSync(file('check.json'), JSON.stringify(kmeSection('X25519MLKEM768:X25519')));
    expect(spawnSync(node!, [entry, 'check', file('check.json')], { encoding: 'utf8' }).stdout.trim()).toBe('accepted');
  });
});
