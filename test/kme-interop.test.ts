// Interop: the requests real ETSI GS QKD 014 clients send, byte for byte, against two real
// sites (A with SAE alice, B with SAE bob). The bytes are written here from each client's
// documented request shape (no client code is used): the QURSA C wrapper (libcurl + jansson;
// HTTPS backend and QuKayDee mode), the nanoy42 Python client (etsi-qkd-014-client 0.9 on
// python-requests 2.28), and the real curl and `openssl s_client` binaries.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect } from 'node:tls';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseKmeConfig } from '../src/config/sections/kme.js';
import type { Logger } from '../src/kme/logger.js';
import { systemSeedSource } from '../src/kme/seed-source.js';
import { KmeSite } from '../src/kme/site.js';
import { createCertificateAuthority, issueKmeCertificate, issueSaeCertificate } from '../src/pki/certs.js';
import { freePort } from './helpers/net.js';

const run = promisify(execFile);

interface Key {
  key_ID: string;
  key: string;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-kme-interop-'));
const file = (name: string): string => path.join(dir, name);
const sites: Record<string, KmeSite> = {};
const port = (site: 'A' | 'B'): number => sites[site]!.port;

beforeAll(async () => {
  const ca = await createCertificateAuthority();
  fs.writeFileSync(file('ca.crt'), ca.certPem);
  for (const id of ['A', 'B']) {
    const c = await issueKmeCertificate(ca, { kmeId: id, hosts: ['127.0.0.1'] });
    fs.writeFileSync(file(`kme-${id}.crt`), c.certPem);
    fs.writeFileSync(file(`kme-${id}.key`), c.keyPem, { mode: 0o600 });
  }
  // carol (A) and mallory (B) are further SAEs of the sites, for the access-policy and quota tests.
  for (const [sae, site] of [['alice', 'A'], ['bob', 'B'], ['carol', 'A'], ['mallory', 'B']] as const) {
    const c = await issueSaeCertificate(ca, { saeId: sae, site });
    fs.writeFileSync(file(`${sae}.crt`), c.certPem);
    fs.writeFileSync(file(`${sae}.key`), c.keyPem, { mode: 0o600 });
  }
  fs.writeFileSync(file('psk-A-B'), Buffer.from(crypto.getRandomValues(new Uint8Array(32))), { mode: 0o600 });
  // B first on a free port, then A, then B again knowing A's port (peers need each other's URLs).
  const config = (id: 'A' | 'B', peer: 'A' | 'B', peerPort: number, saes: Record<string, string>, listenPort = 0) =>
    parseKmeConfig({
      id,
      listen: { host: '127.0.0.1', port: listenPort },
      tls: { cert: file(`kme-${id}.crt`), key: file(`kme-${id}.key`), ca: file('ca.crt') },
      storage: `sqlite:${file(`${id}.db`)}`,
      siteKeyFile: file(`${id}.sitekey`),
      seedSource: 'system',
      peers: { [peer]: { url: `https://127.0.0.1:${peerPort}`, pskFile: file('psk-A-B') } },
      saes,
    });
  const startSite = async (c: ReturnType<typeof config>) => {
    const s = await KmeSite.create(c, { seedSource: systemSeedSource() });
    await s.start();
    sites[c.id] = s;
  };
  await startSite(config('B', 'A', 1, { alice: 'A' }));
  const bPort = port('B');
  await startSite(config('A', 'B', bPort, { bob: 'B' }));
  await sites.B!.stop();
  await startSite(config('B', 'A', port('A'), { alice: 'A' }, bPort));
}, 60_000);

const pairs: Pair[] = [];

afterAll(async () => {
  for (const s of Object.values(sites)) await s.stop();
  for (const p of pairs) await p.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A logger that keeps each line as `level: msg`. */
function captureLogger(lines: string[]): Logger {
  const keep = (level: string) => (_obj: object, msg?: string) => void lines.push(`${level}: ${msg ?? ''}`);
  return { info: keep('info'), warn: keep('warn'), error: keep('error'), debug: keep('debug') };
}

/**
 * Two further sites A and B with their own stores and `extra` settings each (the main pair
 * above keeps the defaults). A registers bob and mallory to B; B registers alice and carol to A.
 */
class Pair {
  readonly sites = {} as Record<'A' | 'B', KmeSite>;
  readonly logs: Record<'A' | 'B', string[]> = { A: [], B: [] };
  constructor(
    private readonly tag: string,
    private readonly extra: { A?: Record<string, unknown>; B?: Record<string, unknown> },
  ) {
    pairs.push(this);
  }

  async start(): Promise<this> {
    const ports = { A: await freePort(), B: await freePort() };
    for (const id of ['A', 'B'] as const) {
      const peer = id === 'A' ? 'B' : 'A';
      const config = parseKmeConfig({
        id,
        listen: { host: '127.0.0.1', port: ports[id] },
        tls: { cert: file(`kme-${id}.crt`), key: file(`kme-${id}.key`), ca: file('ca.crt') },
        storage: `sqlite:${file(`${this.tag}-${id}.db`)}`,
        siteKeyFile: file(`${this.tag}-${id}.sitekey`),
        seedSource: 'system',
        peers: { [peer]: { url: `https://127.0.0.1:${ports[peer]}`, pskFile: file('psk-A-B') } },
        saes: id === 'A' ? { bob: 'B', mallory: 'B' } : { alice: 'A', carol: 'A' },
        ...this.extra[id],
      });
      const site = await KmeSite.create(config, { seedSource: systemSeedSource(), logger: captureLogger(this.logs[id]) });
      await site.start();
      this.sites[id] = site;
    }
    return this;
  }

  port(site: 'A' | 'B'): number {
    return this.sites[site].port;
  }

  async stop(): Promise<void> {
    for (const s of Object.values(this.sites)) await s.stop();
  }
}

/** Sends `bytes` over mutual TLS as `sae` to site A or B of the main pair (or to a port) and reads one HTTP/1.1 answer. */
function raw(site: 'A' | 'B' | number, sae: string, bytes: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port: typeof site === 'number' ? site : port(site),
      cert: fs.readFileSync(file(`${sae}.crt`)),
      key: fs.readFileSync(file(`${sae}.key`)),
      ca: fs.readFileSync(file('ca.crt')),
    });
    let data = Buffer.alloc(0);
    socket.on('secureConnect', () => socket.write(bytes));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const answer = parseAnswer(data);
      if (answer) {
        socket.end();
        resolve(answer);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`connection closed after ${data.length} bytes: ${data.toString()}`)));
  });
}

/** One complete HTTP/1.1 answer with a Content-Length body, or undefined while incomplete. */
function parseAnswer(data: Buffer): Answer | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const length = Number(headers['content-length']);
  const body = data.subarray(end + 4);
  if (body.length < length) return undefined;
  const text = body.subarray(0, length).toString('utf8');
  return { status: Number(statusLine!.split(' ')[1]), headers, body: text ? JSON.parse(text) : undefined };
}

const host = (site: 'A' | 'B' | number): string => `127.0.0.1:${typeof site === 'number' ? site : port(site)}`;

/** Keys from a 200 answer. */
function keysOf(a: Answer): Key[] {
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  expect(a.headers['content-type']).toMatch(/^application\/json/);
  return (a.body as { keys: Key[] }).keys;
}

// QURSA qkd-etsi-api-c-wrapper: every call HTTP/1.1, "Accept: application/json" and
// "Content-Type: application/json" (also on GETs); enc_keys always as GET with number and size.
const qursa = {
  get: (site: 'A' | 'B' | number, p: string) => `GET ${p} HTTP/1.1\r\nHost: ${host(site)}\r\nAccept: application/json\r\nContent-Type: application/json\r\n\r\n`,
  post: (site: 'A' | 'B' | number, p: string, body: string) =>
    `POST ${p} HTTP/1.1\r\nHost: ${host(site)}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
};

// nanoy42 etsi-qkd-014-client on python-requests 2.28: requests' json= is Python's
// json.dumps (", " and ": " separators), Content-Length before Content-Type.
const dumps = (v: unknown): string => {
  if (Array.isArray(v)) return `[${v.map(dumps).join(', ')}]`;
  if (typeof v === 'object' && v !== null) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${dumps(x)}`).join(', ')}}`;
  return JSON.stringify(v);
};
const pyCommon = (site: 'A' | 'B' | number) =>
  `Host: ${host(site)}\r\nUser-Agent: python-requests/2.28.1\r\nAccept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: keep-alive\r\n`;
const python = {
  get: (site: 'A' | 'B' | number, p: string) => `GET ${p} HTTP/1.1\r\n${pyCommon(site)}\r\n`,
  /** requests.request(method, url, json=...): any method with a JSON body. */
  withJson: (method: string, site: 'A' | 'B' | number, p: string, json: unknown) => {
    const body = dumps(json);
    return `${method} ${p} HTTP/1.1\r\n${pyCommon(site)}Content-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\n\r\n${body}`;
  },
};

/** curl with an SAE's certificate: the status and the JSON body, whatever the status. */
async function curlAnswer(sae: string, args: string[]): Promise<{ status: number; body: unknown }> {
  const { stdout } = await run('curl', ['-sS', '-w', '\n%{http_code}', '--cert', file(`${sae}.crt`), '--key', file(`${sae}.key`), '--cacert', file('ca.crt'), ...args]);
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: JSON.parse(stdout.slice(0, cut)) };
}

describe('QURSA qkd-etsi-api-c-wrapper (libcurl, jansson JSON_COMPACT)', () => {
  const { get, post } = qursa;

  for (const mode of ['HTTPS backend', 'QuKayDee mode'] as const) {
    it(`${mode}: status, enc_keys at A, dec_keys at B`, async () => {
      const status = await raw('A', 'alice', get('A', '/api/v1/keys/bob/status'));
      expect(status.status).toBe(200);
      expect(status.body).toMatchObject({ source_KME_ID: 'A', target_KME_ID: 'B', master_SAE_ID: 'alice', slave_SAE_ID: 'bob', key_size: 256 });
      for (const field of ['stored_key_count', 'max_key_count', 'max_key_per_request', 'max_key_size', 'min_key_size', 'max_SAE_ID_count']) {
        expect(Number.isInteger((status.body as Record<string, unknown>)[field]), field).toBe(true);
      }
      const made = keysOf(await raw('A', 'alice', get('A', '/api/v1/keys/bob/enc_keys?number=2&size=256')));
      expect(made).toHaveLength(2);
      const items = made.map((k) => (mode === 'QuKayDee mode' ? `{"key_ID":"${k.key_ID}","master_SAE_ID":"alice"}` : `{"key_ID":"${k.key_ID}"}`));
      const got = keysOf(await raw('B', 'bob', post('B', '/api/v1/keys/alice/dec_keys', `{"key_IDs":[${items.join(',')}]}`)));
      expect(got).toEqual(made);
    });
  }
});

describe('nanoy42 etsi-qkd-014-client (python-requests)', () => {
  const get = python.get;
  const post = (site: 'A' | 'B', p: string, json: unknown) => python.withJson('POST', site, p, json);

  it('get_status, get_key (GET without options, POST with number), get_key_with_key_IDs with key_IDs_extension and key_ID_extension', async () => {
    expect((await raw('A', 'alice', get('A', '/api/v1/keys/bob/status'))).body).toMatchObject({ slave_SAE_ID: 'bob', stored_key_count: expect.any(Number) });
    const one = keysOf(await raw('A', 'alice', get('A', '/api/v1/keys/bob/enc_keys')));
    const three = keysOf(await raw('A', 'alice', post('A', '/api/v1/keys/bob/enc_keys', { number: 3 })));
    expect(one).toHaveLength(1);
    expect(three).toHaveLength(3);
    const bytes = post('B', '/api/v1/keys/alice/dec_keys', { key_IDs: [{ key_ID: one[0]!.key_ID }], key_IDs_extension: { purpose: 'test' } });
    expect(bytes).toContain(`{"key_IDs": [{"key_ID": "${one[0]!.key_ID}"}], "key_IDs_extension": {"purpose": "test"}}`);
    expect(keysOf(await raw('B', 'bob', bytes))).toEqual(one);
    const withItemExtensions = post('B', '/api/v1/keys/alice/dec_keys', { key_IDs: three.map((k, i) => ({ key_ID: k.key_ID, key_ID_extension: { n: i } })) });
    expect(keysOf(await raw('B', 'bob', withItemExtensions))).toEqual(three);
  });
});

describe('curl', () => {
  const curl = async (sae: string, args: string[]): Promise<unknown> => {
    const { stdout } = await run('curl', ['-sS', '--fail-with-body', '--cert', file(`${sae}.crt`), '--key', file(`${sae}.key`), '--cacert', file('ca.crt'), ...args]);
    return JSON.parse(stdout);
  };
  const url = (site: 'A' | 'B', p: string) => `https://${host(site)}${p}`;

  it('GET forms: status, enc_keys with query, dec_keys with key_ID', async () => {
    // A site-addressed path names no slave SAE: ETSI's slave_SAE_ID is an SAE ID, so it is left out and status_extension says why.
    const status = (await curl('alice', [url('A', '/api/v1/keys/B/status')])) as Record<string, unknown>;
    expect(status).toMatchObject({ target_KME_ID: 'B', status_extension: { slave: { site_addressed: true, site: 'B' } } });
    expect(status).not.toHaveProperty('slave_SAE_ID');
    const { keys } = (await curl('alice', [url('A', '/api/v1/keys/bob/enc_keys?number=1&size=512')])) as { keys: Key[] };
    expect(await curl('bob', [url('B', `/api/v1/keys/alice/dec_keys?key_ID=${keys[0]!.key_ID}`)])).toEqual({ keys });
  });

  it('POST forms: -d JSON, -X POST with no body, -d "" with Content-Type: application/json', async () => {
    const json = ['-H', 'Content-Type: application/json'];
    const a = (await curl('alice', [...json, '-d', '{"number": 2, "size": 128}', url('A', '/api/v1/keys/B/enc_keys')])) as { keys: Key[] };
    const b = (await curl('alice', [...json, '-X', 'POST', url('A', '/api/v1/keys/B/enc_keys')])) as { keys: Key[] };
    const c = (await curl('alice', [...json, '-d', '', url('A', '/api/v1/keys/B/enc_keys')])) as { keys: Key[] };
    expect([a.keys.length, b.keys.length, c.keys.length]).toEqual([2, 1, 1]);
    const all = [...a.keys, ...b.keys, ...c.keys];
    const body = JSON.stringify({ key_IDs: all.map((k) => ({ key_ID: k.key_ID })) });
    expect(await curl('bob', [...json, '-d', body, url('B', '/api/v1/keys/A/dec_keys')])).toEqual({ keys: all });
  });
});

describe('openssl s_client', () => {
  /** Types an HTTP request into `openssl s_client` with the SAE's certificate; returns the answer. */
  const sClient = (site: 'A' | 'B', sae: string, request: string): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const child = spawn('openssl', [
        's_client', '-quiet', '-connect', host(site), '-cert', file(`${sae}.crt`), '-key', file(`${sae}.key`), '-CAfile', file('ca.crt'), '-verify_return_error',
      ]);
      let out = Buffer.alloc(0);
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out = Buffer.concat([out, d])));
      child.stderr.on('data', (d) => (err += d));
      child.on('exit', () => {
        const answer = parseAnswer(out);
        if (answer) resolve(answer);
        else reject(new Error(`no HTTP answer from s_client: ${out.toString()} ${err}`));
      });
      child.stdin.end(request);
    });

  it('a typed GET enc_keys at A and POST dec_keys at B', async () => {
    const made = keysOf(await sClient('A', 'alice', `GET /api/v1/keys/B/enc_keys?number=2 HTTP/1.1\r\nHost: ${host('A')}\r\nConnection: close\r\n\r\n`));
    const body = JSON.stringify({ key_IDs: made.map((k) => ({ key_ID: k.key_ID })) });
    const got = keysOf(
      await sClient('B', 'bob', `POST /api/v1/keys/A/dec_keys HTTP/1.1\r\nHost: ${host('B')}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`),
    );
    expect(got).toEqual(made);
  });
});

/** The ETSI error body: a message and a details array, nothing else. */
function expectEtsiBody(a: Answer, status: number): { message: string; details: Array<Record<string, unknown>> } {
  expect(a.status, JSON.stringify(a.body)).toBe(status);
  expect(a.headers['content-type']).toMatch(/^application\/json/);
  const body = a.body as { message: string; details: Array<Record<string, unknown>> };
  expect(Object.keys(body).sort()).toEqual(['details', 'message']);
  expect(typeof body.message).toBe('string');
  expect(Array.isArray(body.details)).toBe(true);
  return body;
}

const NOT_FOUND = 'one or more keys specified are not found on KME';

describe('who may fetch a key addressed to a site (kme.siteAddressedKeys, issue 26 item 1)', () => {
  it('default "any-sae": the spec flow works and the site warns at start that any of its SAEs may fetch such keys', async () => {
    // The main pair runs the default: the curl and s_client tests above fetch site-addressed keys.
    const pair = await new Pair('default-policy', {}).start();
    for (const id of ['A', 'B'] as const) {
      expect(pair.logs[id].filter((l) => l.startsWith('warn:') && l.includes('kme.siteAddressedKeys'))).toHaveLength(1);
    }
  });

  it('an allow list at the receiving site: mallory@B gets "not found" for alice’s key to site B, bob@B still gets it', async () => {
    const pair = await new Pair('allow-list', { B: { siteAddressedKeys: { bob: ['alice'] } } }).start();
    expect(pair.logs.B.filter((l) => l.includes('kme.siteAddressedKeys'))).toEqual([]);
    const a = pair.port('A');
    const b = pair.port('B');
    // curl: alice asks A for a key shared with site B (the README's `kme enc B`).
    const made = await curlAnswer('alice', [`https://${host(a)}/api/v1/keys/B/enc_keys?number=1`]);
    expect(made.status).toBe(200);
    const [key] = (made.body as { keys: Key[] }).keys;
    const fetch = (sae: string) => curlAnswer(sae, ['-H', 'Content-Type: application/json', '-d', JSON.stringify({ key_IDs: [{ key_ID: key!.key_ID }] }), `https://${host(b)}/api/v1/keys/A/dec_keys`]);
    // Word for word what an unknown key ID gets: nothing tells mallory the key exists.
    expect(await fetch('mallory')).toEqual({ status: 400, body: { message: NOT_FOUND, details: [{ key_ID: key!.key_ID }] } });
    expect(await fetch('bob')).toEqual({ status: 200, body: { keys: [key] } });
    // Keys addressed to an SAE are not affected: QURSA's SAE-ID paths.
    const named = keysOf(await raw(a, 'alice', qursa.get(a, '/api/v1/keys/mallory/enc_keys?number=1&size=256')));
    expect(keysOf(await raw(b, 'mallory', qursa.post(b, '/api/v1/keys/alice/dec_keys', `{"key_IDs":[{"key_ID":"${named[0]!.key_ID}"}]}`)))).toEqual(named);
  });

  it('"refuse" at the origin: enc_keys to a site is 400 naming the setting; to an SAE it works', async () => {
    const pair = await new Pair('refuse-origin', { A: { siteAddressedKeys: 'refuse' } }).start();
    const a = pair.port('A');
    const refused = expectEtsiBody(await raw(a, 'alice', python.get(a, '/api/v1/keys/B/enc_keys')), 400);
    expect(refused.message).toContain('kme.siteAddressedKeys');
    expect(keysOf(await raw(a, 'alice', python.get(a, '/api/v1/keys/bob/enc_keys')))).toHaveLength(1);
  });

  it('"refuse" at the receiving site: it stores no site-addressed key, and the origin’s SAE gets 503 saying why', async () => {
    const pair = await new Pair('refuse-peer', { B: { siteAddressedKeys: 'refuse' } }).start();
    const a = pair.port('A');
    const refused = expectEtsiBody(await raw(a, 'alice', python.get(a, '/api/v1/keys/B/enc_keys')), 503);
    expect(JSON.stringify(refused)).toContain('kme.siteAddressedKeys');
    expect(keysOf(await raw(a, 'alice', python.get(a, '/api/v1/keys/bob/enc_keys')))).toHaveLength(1);
  });
});

describe('the policy and quota settings', () => {
  const base = { id: 'B', tls: { cert: 'c', key: 'k', ca: 'a' }, peers: { A: { url: 'https://127.0.0.1:1' } }, saes: { alice: 'A' } };
  it('are checked when the config is read, naming the key and the problem', () => {
    expect(parseKmeConfig(base)).toMatchObject({ siteAddressedKeys: { mode: 'any-sae' }, maxKeyCountPerSae: 25_000, saeRateLimit: { keys: 100_000, seconds: 10 } });
    expect(parseKmeConfig({ ...base, siteAddressedKeys: { bob: ['alice', 'A'] } }).siteAddressedKeys).toEqual({ mode: 'allow', allow: { bob: ['alice', 'A'] } });
    expect(() => parseKmeConfig({ ...base, siteAddressedKeys: 'anyone' })).toThrow(/^kme\.siteAddressedKeys: must be "any-sae", "refuse" or an object/);
    expect(() => parseKmeConfig({ ...base, siteAddressedKeys: { alice: ['A'] } })).toThrow(/^kme\.siteAddressedKeys\.alice: is registered in kme\.saes to site 'A', not to this site/);
    expect(() => parseKmeConfig({ ...base, siteAddressedKeys: { bob: 'alice' } })).toThrow(/^kme\.siteAddressedKeys\.bob: must be an array/);
    expect(() => parseKmeConfig({ ...base, maxKeyCount: 10, maxKeyCountPerSae: 11 })).toThrow(/^kme\.maxKeyCountPerSae: must be an integer from 1 to 10/);
    expect(() => parseKmeConfig({ ...base, saeRateLimit: { keys: 0 } })).toThrow(/^kme\.saeRateLimit\.keys: must be an integer/);
    expect(() => parseKmeConfig({ ...base, maxConnections: 0 })).toThrow(/^kme\.maxConnections: must be an integer/);
  });
});

describe('ETSI semantics the real clients rely on (issue 29)', () => {
  it('QURSA QuKayDee mode with KME IDs: an item’s master_SAE_ID may be the origin’s KME ID, as the path may', async () => {
    const made = keysOf(await raw('A', 'alice', qursa.get('A', '/api/v1/keys/B/enc_keys?number=2&size=256')));
    const items = made.map((k) => `{"key_ID":"${k.key_ID}","master_SAE_ID":"A"}`).join(',');
    expect(keysOf(await raw('B', 'bob', qursa.post('B', '/api/v1/keys/A/dec_keys', `{"key_IDs":[${items}]}`)))).toEqual(made);
  });

  it('GET enc_keys with a JSON body (requests.get(url, json={"number": 2})) is 400 saying GET takes query parameters', async () => {
    const answer = expectEtsiBody(await raw('A', 'alice', python.withJson('GET', 'A', '/api/v1/keys/bob/enc_keys', { number: 2 })), 400);
    expect(answer.message).toMatch(/GET takes its parameters in the query/);
  });

  it('PUT and DELETE on an ETSI path: 405 with Allow, in ETSI’s error shape', async () => {
    for (const method of ['PUT', 'DELETE']) {
      const answer = await raw('A', 'alice', python.withJson(method, 'A', '/api/v1/keys/bob/enc_keys', { number: 1 }));
      expectEtsiBody(answer, 405);
      expect(answer.headers.allow).toBe('GET, HEAD, POST');
    }
    const status = await raw('A', 'alice', `DELETE /api/v1/keys/bob/status HTTP/1.1\r\nHost: ${host('A')}\r\n\r\n`);
    expectEtsiBody(status, 405);
    expect(status.headers.allow).toBe('GET, HEAD');
    expectEtsiBody(await raw('A', 'alice', python.get('A', '/api/v1/nothing')), 404);
  });

  it('a 20 KB header is 431 and a body over the ETSI limit is 413, both in ETSI’s error shape', async () => {
    const big = `GET /api/v1/keys/bob/status HTTP/1.1\r\nHost: ${host('A')}\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`;
    expectEtsiBody(await raw('A', 'alice', big), 431);
    const keyIds = Array.from({ length: 2000 }, () => ({ key_ID: crypto.randomUUID() }));
    expectEtsiBody(await raw('B', 'bob', qursa.post('B', '/api/v1/keys/alice/dec_keys', JSON.stringify({ key_IDs: keyIds }))), 413);
  });

  it('additional_slave_SAE_IDs naming the slave of the path is 400, as a duplicate is', async () => {
    const answer = expectEtsiBody(
      await raw('A', 'alice', python.withJson('POST', 'A', '/api/v1/keys/bob/enc_keys', { number: 1, additional_slave_SAE_IDs: ['bob'] })),
      400,
    );
    expect(answer.details).toEqual([expect.objectContaining({ additional_slave_SAE_ID: 'bob' })]);
  });
});

describe('a fair share of the link per SAE, a rate limit per SAE and listener limits (issue 26 items 3, 4; issue 29 items 2, 4)', () => {
  it('B holds at most maxKeyCountPerSae keys per master SAE: alice’s 503 names her, carol still gets keys, and A’s status shows the peer’s room', async () => {
    const pair = await new Pair('share', { B: { maxKeyCount: 30, maxKeyCountPerSae: 20 } }).start();
    const a = pair.port('A');
    const status = async (sae: string) => (await raw(a, sae, qursa.get(a, '/api/v1/keys/bob/status'))).body as Record<string, unknown>;
    // A's own store is empty, but what alice can get is what B can still take from her.
    expect(await status('alice')).toMatchObject({ stored_key_count: 20, max_key_count: 100_000 });
    const alices = keysOf(await raw(a, 'alice', qursa.get(a, '/api/v1/keys/bob/enc_keys?number=20&size=256')));
    expect(alices).toHaveLength(20);
    expect(await status('alice')).toMatchObject({ stored_key_count: 0 });
    const full = expectEtsiBody(await raw(a, 'alice', qursa.get(a, '/api/v1/keys/bob/enc_keys?number=1&size=256')), 503);
    expect(full.message).toContain("SAE 'alice'");
    expect(full.details).toEqual([expect.objectContaining({ master_SAE_ID: 'alice', max_key_count_per_SAE: 20 })]);
    // One delivery batching alice's and carol's keys: B stores carol's and refuses alice's
    // alone, so alice's full share never fails another SAE's request. An origin that does
    // not announce it handles that (an older version) gets the whole delivery refused.
    const b = pair.port('B');
    const link = pair.sites.B.pq.linkStatus('A').ratchet as { suite: string; epoch: number };
    const wire = (owner: string) => ({
      key_ID: crypto.randomUUID(), size: 256, seed: Buffer.alloc(32, 7).toString('base64'), origin: 'A', peer: 'B',
      created: Date.now(), suite: link.suite, epoch: link.epoch, master_SAE_ID: owner, slave_SAE_IDs: ['bob'],
    });
    const deliver = async (body: unknown) => raw(b, 'kme-A', qursa.post(b, '/internal/v1/keys/deliver', JSON.stringify(body)));
    const whole = await deliver({ keys: [wire('alice'), wire('carol')] });
    expect(whole.status).toBe(503);
    const [fromAlice, fromCarol] = [wire('alice'), wire('carol')];
    const partial = await deliver({ keys: [fromAlice, fromCarol], partial: true });
    expect(partial.status).toBe(200);
    expect(partial.body).toMatchObject({ stored: 1, refused: [{ master_SAE_ID: 'alice', key_IDs: [fromAlice.key_ID] }] });
    // Another SAE of A is not locked out by alice; B's link limit (30) still holds for both.
    expect(await status('carol')).toMatchObject({ stored_key_count: 9 });
    expect(keysOf(await raw(a, 'carol', qursa.get(a, '/api/v1/keys/bob/enc_keys?number=9&size=256')))).toHaveLength(9);
    expect(await status('carol')).toMatchObject({ stored_key_count: 0 });
    expectEtsiBody(await raw(a, 'carol', qursa.get(a, '/api/v1/keys/bob/enc_keys?number=1&size=256')), 503);
    // bob fetching alice's keys gives her share (and the link) the room back.
    const items = alices.map((k) => `{"key_ID":"${k.key_ID}"}`).join(',');
    expect(keysOf(await raw(b, 'bob', qursa.post(b, '/api/v1/keys/alice/dec_keys', `{"key_IDs":[${items}]}`)))).toEqual(alices);
    expect(await status('alice')).toMatchObject({ stored_key_count: 20 });
    expect(keysOf(await raw(a, 'alice', qursa.get(a, '/api/v1/keys/bob/enc_keys?number=20&size=256')))).toHaveLength(20);
  });

  it('an SAE over kme.saeRateLimit gets 503 with Retry-After naming it; another SAE is not affected', async () => {
    const pair = await new Pair('rate', { A: { saeRateLimit: { keys: 3, seconds: 3600 } } }).start();
    const a = pair.port('A');
    expect(keysOf(await raw(a, 'alice', python.withJson('POST', a, '/api/v1/keys/bob/enc_keys', { number: 3 })))).toHaveLength(3);
    const limited = await raw(a, 'alice', python.withJson('POST', a, '/api/v1/keys/bob/enc_keys', { number: 1 }));
    const body = expectEtsiBody(limited, 503);
    expect(body.message).toContain("SAE 'alice'");
    expect(body.message).toContain('kme.saeRateLimit');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(keysOf(await raw(a, 'carol', python.withJson('POST', a, '/api/v1/keys/bob/enc_keys', { number: 1 })))).toHaveLength(1);
  });

  it('a body dribbled past kme.requestTimeoutMs gets 408 in ETSI’s shape', async () => {
    const pair = await new Pair('timeout', { A: { requestTimeoutMs: 1000 } }).start();
    const a = pair.port('A');
    // Headers promise 100 bytes; two arrive and then nothing: raw() resolves on the answer.
    const answer = await raw(a, 'alice', `POST /api/v1/keys/bob/enc_keys HTTP/1.1\r\nHost: ${host(a)}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"`);
    expectEtsiBody(answer, 408);
  });

  it('SAE connections beyond kme.maxConnections get 503 with Retry-After in ETSI’s shape', async () => {
    const pair = await new Pair('connections', { A: { maxConnections: 2 } }).start();
    const a = pair.port('A');
    const held = await Promise.all([0, 1].map(() => keepAlive(a, 'alice')));
    try {
      // Both held connections have had an answer, so the server counts them.
      const over = await raw(a, 'carol', python.get(a, '/api/v1/keys/bob/status'));
      expectEtsiBody(over, 503);
      expect(over.headers['retry-after']).toBe('1');
      for (const socket of held) expect(socket.destroyed).toBe(false);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });
});

/** A connection as `sae` that has had one status answer and stays open. */
function keepAlive(sitePort: number, sae: string): Promise<ReturnType<typeof connect>> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port: sitePort,
      cert: fs.readFileSync(file(`${sae}.crt`)),
      key: fs.readFileSync(file(`${sae}.key`)),
      ca: fs.readFileSync(file('ca.crt')),
    });
    let data = Buffer.alloc(0);
    socket.on('secureConnect', () => socket.write(python.get(sitePort, '/api/v1/keys/bob/status')));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const answer = parseAnswer(data);
      if (answer?.status === 200) resolve(socket);
      else if (answer) reject(new Error(`status ${answer.status}`));
    });
    socket.on('error', reject);
  });
}
