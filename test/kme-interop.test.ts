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
import { systemSeedSource } from '../src/kme/seed-source.js';
import { KmeSite } from '../src/kme/site.js';
import { createCertificateAuthority, issueKmeCertificate, issueSaeCertificate } from '../src/pki/certs.js';

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
  for (const [sae, site] of [['alice', 'A'], ['bob', 'B']] as const) {
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

afterAll(async () => {
  for (const s of Object.values(sites)) await s.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Sends `bytes` over mutual TLS as `sae` and reads one HTTP/1.1 answer. */
function raw(site: 'A' | 'B', sae: string, bytes: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port: port(site),
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

const host = (site: 'A' | 'B'): string => `127.0.0.1:${port(site)}`;

/** Keys from a 200 answer. */
function keysOf(a: Answer): Key[] {
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  expect(a.headers['content-type']).toMatch(/^application\/json/);
  return (a.body as { keys: Key[] }).keys;
}

describe('QURSA qkd-etsi-api-c-wrapper (libcurl, jansson JSON_COMPACT)', () => {
  // Every call: HTTP/1.1, "Accept: application/json" and "Content-Type: application/json"
  // (also on GETs), SAE IDs in the path; enc_keys always as GET with number and size.
  const get = (site: 'A' | 'B', p: string) => `GET ${p} HTTP/1.1\r\nHost: ${host(site)}\r\nAccept: application/json\r\nContent-Type: application/json\r\n\r\n`;
  const post = (site: 'A' | 'B', p: string, body: string) =>
    `POST ${p} HTTP/1.1\r\nHost: ${host(site)}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

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
  const common = (site: 'A' | 'B') =>
    `Host: ${host(site)}\r\nUser-Agent: python-requests/2.28.1\r\nAccept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: keep-alive\r\n`;
  const get = (site: 'A' | 'B', p: string) => `GET ${p} HTTP/1.1\r\n${common(site)}\r\n`;
  // requests' json= : Python's json.dumps (", " and ": " separators); Content-Length before Content-Type.
  const dumps = (v: unknown): string => {
    if (Array.isArray(v)) return `[${v.map(dumps).join(', ')}]`;
    if (typeof v === 'object' && v !== null) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${dumps(x)}`).join(', ')}}`;
    return JSON.stringify(v);
  };
  const post = (site: 'A' | 'B', p: string, json: unknown) => {
    const body = dumps(json);
    return `POST ${p} HTTP/1.1\r\n${common(site)}Content-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\n\r\n${body}`;
  };

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
    expect(await curl('alice', [url('A', '/api/v1/keys/B/status')])).toMatchObject({ target_KME_ID: 'B', slave_SAE_ID: 'B' });
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
