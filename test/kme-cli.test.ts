// The PKI and KME commands as users run them: the CLI bundled into a private
// directory (test/helpers/package.ts), `qentropy pki init|issue` checked with OpenSSL (an independent X.509 parser),
// and a two-site walk-through with `qentropy kme status|enc|dec` against KME sites running
// as their own processes, one of them killed (SIGKILL) and restarted between enc and dec.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestPackage, runNode, srcPath, type RunResult, type TestPackage } from './helpers/package.js';
import { freePort } from './helpers/net.js';

let pkg: TestPackage;
let work: string;
let siteRunner: string;

function run(args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return runNode(pkg.cli, args, { QENTROPY_CONFIG: path.join(pkg.dir, 'absent.json'), ...env });
}

function openssl(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('openssl', args, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout)));
  });
}

beforeAll(() => {
  pkg = createTestPackage('kme-cli');
  work = path.join(pkg.dir, 'work');
  fs.mkdirSync(work);
  // A one-site runner, as the daemon's kme role would run it.
  siteRunner = pkg.bundle(
    'site.mjs',
    `import fs from 'node:fs';
import { parseKmeConfig } from ${JSON.stringify(srcPath('config/sections/kme.ts'))};
import { KmeSite } from ${JSON.stringify(srcPath('kme/site.ts'))};
import { systemSeedSource } from ${JSON.stringify(srcPath('kme/seed-source.ts'))};
const site = await KmeSite.create(parseKmeConfig(JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))), { seedSource: systemSeedSource() });
await site.start();
process.stdout.write('listening ' + site.port + '\\n');
`,
  );
}, 60_000);

afterAll(() => pkg?.remove());

const mode = (f: string): number => fs.statSync(f).mode & 0o777;

describe('qentropy pki', () => {
  it('init makes a CA (key 0600) and refuses to overwrite it without --force', async () => {
    const dir = path.join(work, 'pki-ec');
    const init = await run(['pki', 'init', '--dir', dir]);
    expect(init.code, init.stderr).toBe(0);
    expect(JSON.parse(init.stdout)).toEqual({ ca: path.join(dir, 'ca.crt'), key: path.join(dir, 'ca.key') });
    expect(mode(path.join(dir, 'ca.key'))).toBe(0o600);
    const text = await openssl(['x509', '-in', path.join(dir, 'ca.crt'), '-noout', '-text']);
    expect(text).toMatch(/CA:TRUE/);
    expect(text).toMatch(/prime256v1|P-256/);
    const again = await run(['pki', 'init', '--dir', dir]);
    expect(again.code).not.toBe(0);
    expect(again.stderr.trim().split('\n')).toHaveLength(1);
    expect(again.stderr).toMatch(/exists/);
    expect((await run(['pki', 'init', '--dir', dir, '--force'])).code).toBe(0);
  });

  it('issues KME and SAE certificates that carry their role; OpenSSL verifies them against the CA', async () => {
    const dir = path.join(work, 'pki-roles');
    expect((await run(['pki', 'init', '--dir', dir])).code).toBe(0);
    const kme = await run(['pki', 'issue', '--dir', dir, '--kme', 'A', '--host', '127.0.0.1', 'kme-a.example', '--days', '30']);
    expect(kme.code, kme.stderr).toBe(0);
    const kmeFiles = JSON.parse(kme.stdout) as { cert: string; key: string };
    expect(mode(kmeFiles.key)).toBe(0o600);
    const kmeText = await openssl(['x509', '-in', kmeFiles.cert, '-noout', '-text']);
    expect(kmeText).toContain('URI:urn:qentropy:kme:A');
    expect(kmeText).toContain('IP Address:127.0.0.1');
    expect(kmeText).toContain('DNS:kme-a.example');
    expect(kmeText).toMatch(/TLS Web Server Authentication, TLS Web Client Authentication/);
    expect(await openssl(['verify', '-CAfile', path.join(dir, 'ca.crt'), kmeFiles.cert])).toMatch(/OK/);

    const sae = await run(['pki', 'issue', '--dir', dir, '--sae', 'alice', '--site', 'A']);
    expect(sae.code, sae.stderr).toBe(0);
    const saeText = await openssl(['x509', '-in', (JSON.parse(sae.stdout) as { cert: string }).cert, '-noout', '-text', '-subject']);
    expect(saeText).toContain('URI:urn:qentropy:sae:alice');
    expect(saeText).toContain('URI:urn:qentropy:site:A');
    expect(saeText).toMatch(/CN ?= ?alice/);
    expect(saeText).toContain('TLS Web Client Authentication');
    expect(saeText).not.toContain('TLS Web Server Authentication');

    for (const bad of [
      ['--sae', 'bob'],
      ['--kme', 'A', '--sae', 'bob', '--site', 'A'],
      ['--kme', 'bad id!'],
      ['--kme', 'Z', '--algorithm', 'rsa'],
    ]) {
      const r = await run(['pki', 'issue', '--dir', dir, ...bad]);
      expect(r.code, bad.join(' ')).not.toBe(0);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('makes Ed25519 CAs and certificates on request', async () => {
    const dir = path.join(work, 'pki-ed');
    expect((await run(['pki', 'init', '--dir', dir, '--algorithm', 'ed25519'])).code).toBe(0);
    const kme = await run(['pki', 'issue', '--dir', dir, '--kme', 'B', '--algorithm', 'ed25519']);
    const text = await openssl(['x509', '-in', (JSON.parse(kme.stdout) as { cert: string }).cert, '-noout', '-text']);
    expect(text).toMatch(/ED25519/i);
    expect(await openssl(['verify', '-CAfile', path.join(dir, 'ca.crt'), (JSON.parse(kme.stdout) as { cert: string }).cert])).toMatch(/OK/);
  });
});

function startSite(configFile: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [siteRunner, configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('listening')) resolve(child);
    });
    child.stderr!.on('data', (d) => (err += d));
    child.on('exit', (code) => reject(new Error(`site exited (${code}): ${err}`)));
  });
}

describe('qentropy kme: a two-site walk-through with processes', () => {
  const children: ChildProcess[] = [];
  afterAll(() => children.forEach((c) => c.kill('SIGKILL')));

  it('status, enc at A, dec at B; B killed (SIGKILL) and restarted between enc and dec keeps the key', async () => {
    const pki = path.join(work, 'cluster');
    expect((await run(['pki', 'init', '--dir', pki])).code).toBe(0);
    for (const args of [['--kme', 'A', '--host', '127.0.0.1'], ['--kme', 'B', '--host', '127.0.0.1'], ['--sae', 'a1', '--site', 'A'], ['--sae', 'b1', '--site', 'B']]) {
      const r = await run(['pki', 'issue', '--dir', pki, ...args]);
      expect(r.code, r.stderr).toBe(0);
    }
    const ports = { A: await freePort(), B: await freePort() };
    const configFor = (id: 'A' | 'B', peer: 'A' | 'B'): string => {
      const f = path.join(work, `kme-${id}.json`);
      fs.writeFileSync(
        f,
        JSON.stringify({
          id,
          listen: { host: '127.0.0.1', port: ports[id] },
          tls: { cert: path.join(pki, `kme-${id}.crt`), key: path.join(pki, `kme-${id}.key`), ca: path.join(pki, 'ca.crt') },
          storage: `sqlite:${path.join(work, `kme-${id}.db`)}`,
          siteKeyFile: path.join(work, `kme-${id}.sitekey`),
          peers: { [peer]: { url: `https://127.0.0.1:${ports[peer]}` } },
          seedSource: 'system',
        }),
      );
      return f;
    };
    const cfgA = configFor('A', 'B');
    const cfgB = configFor('B', 'A');
    children.push(await startSite(cfgA));
    let siteB = await startSite(cfgB);
    children.push(siteB);

    const asSae = (sae: string, site: 'A' | 'B'): string[] => [
      '--url', `https://127.0.0.1:${ports[site]}`, '--cert', path.join(pki, `sae-${sae}.crt`), '--key', path.join(pki, `sae-${sae}.key`), '--ca', path.join(pki, 'ca.crt'),
    ];
    const status = await run(['kme', 'status', 'B', ...asSae('a1', 'A')]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ source_KME_ID: 'A', target_KME_ID: 'B', master_SAE_ID: 'a1', key_size: 256 });

    const enc = await run(['kme', 'enc', 'B', '--number', '3', '--size', '512', ...asSae('a1', 'A')]);
    expect(enc.code, enc.stderr).toBe(0);
    const made = JSON.parse(enc.stdout) as { keys: Array<{ key_ID: string; key: string }> };
    expect(made.keys).toHaveLength(3);
    for (const k of made.keys) expect(Buffer.from(k.key, 'base64')).toHaveLength(64);

    siteB.kill('SIGKILL');
    await new Promise((r) => siteB.once('exit', r));
    const down = await run(['kme', 'dec', 'A', made.keys[0]!.key_ID, ...asSae('b1', 'B')]);
    expect(down.code).toBe(2); // unreachable
    expect(down.stderr).toMatch(/^qentropy: cannot reach the KME/);
    siteB = await startSite(cfgB);
    children.push(siteB);

    const dec = await run(['kme', 'dec', 'A', ...made.keys.map((k) => k.key_ID), ...asSae('b1', 'B')]);
    expect(dec.code, dec.stderr).toBe(0);
    expect(JSON.parse(dec.stdout)).toEqual(made);
    const again = await run(['kme', 'dec', 'A', made.keys[0]!.key_ID, ...asSae('b1', 'B')]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^qentropy: KME answered 400: one or more keys specified are not found on KME/);

    const noUrl = await run(['kme', 'status', 'B', '--cert', 'x', '--key', 'y', '--ca', 'z']);
    expect(noUrl.code).toBe(1);
    expect(noUrl.stderr.trim().split('\n')).toHaveLength(1);
  });
});
