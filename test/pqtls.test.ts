// tls.groups on the entropy service and its clients, with real TLS: the default follows the
// runtime (hybrid X25519MLKEM768 first where OpenSSL has ML-KEM, as on every supported Node line), a
// configured list is what the face negotiates, every handshake is counted by face and
// group on /metrics, and the config refuses groups the runtime does not have.
import { generateKeyPairSync, webcrypto } from 'node:crypto';
import { connect as tlsConnect } from 'node:tls';

import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { EntropyClient } from '../src/client/index.js';
import { ConfigError, resolveConfig } from '../src/config/index.js';
import { defaultGroups, groupSupported, HYBRID_DEFAULT_GROUPS, hybridAvailable, kexGroupOfSession, negotiatedGroup } from '../src/pqtls/index.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import { makeToken, startTestServer, type TestServer } from './entropy-harness.js';

const HYBRID = hybridAvailable();
const EXPECTED_GROUP = HYBRID ? 'X25519MLKEM768' : 'X25519';

function sample(text: string, labels: Record<string, string>): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith('qentropy_tls_handshakes_total{') && want.every((w) => l.includes(w)));
  return line ? Number(line.slice(line.indexOf('}') + 1)) : 0;
}

function groupSeenByClient(url: string, ca: string, ecdhCurve?: string): Promise<string | undefined> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port: Number(port), ca, servername: 'localhost', ...(ecdhCurve ? { ecdhCurve } : {}) }, () => {
      // negotiatedGroup: Node 22 names no hybrid group itself (src/pqtls/negotiated.ts).
      const group = negotiatedGroup(s, ecdhCurve ?? defaultGroups());
      s.end();
      resolve(group);
    });
    s.on('error', reject);
  });
}

describe('the runtime and its default', () => {
  it(`OpenSSL ${process.versions.openssl}: hybrid groups ${HYBRID ? 'available' : 'not available'}, and the default list follows`, () => {
    const [major, minor] = process.versions.openssl!.split('.').map(Number) as [number, number];
    expect(HYBRID).toBe(major > 3 || (major === 3 && minor >= 5));
    expect(defaultGroups()).toBe(HYBRID_DEFAULT_GROUPS);
    expect(HYBRID_DEFAULT_GROUPS).toBe('X25519MLKEM768:X25519:P-256');
  });

  it('probing a group the runtime lacks leaves OpenSSL usable: WebCrypto still imports keys (qentropy pki issue)', async () => {
    expect(groupSupported('NoSuchGroup1')).toBe(false);
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const der = privateKey.export({ format: 'der', type: 'pkcs8' });
    await expect(webcrypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])).resolves.toBeDefined();
  });

  it('reads the group code point from a serialized OpenSSL session (field [19] kex_group)', () => {
    // SEQUENCE { INTEGER 1, [19] { INTEGER 0x11ec } } and the same without the field.
    expect(kexGroupOfSession(Buffer.from('300902010 1b30402 0211ec'.replace(/ /g, ''), 'hex'))).toBe(0x11ec);
    expect(kexGroupOfSession(Buffer.from('3003020101', 'hex'))).toBeUndefined();
    expect(kexGroupOfSession(Buffer.from('30ff', 'hex'))).toBeUndefined();
  });
});

describe('tls.groups on the entropy service and the upstream client', () => {
  let db: Db;
  let server: TestServer;
  let pinned: TestServer;
  let token: string;
  beforeAll(async () => {
    db = await openDatabase({ url: 'sqlite::memory:' });
    server = await startTestServer({ db, poolCapacity: 64 * 1024 });
    pinned = await startTestServer({ db, poolCapacity: 64 * 1024, tlsGroups: 'P-256' });
    token = (await makeToken(server.store, 'pq')).token;
  });
  afterAll(async () => {
    await server.close();
    await pinned.close();
    await db.close();
  });

  const metrics = async (s: TestServer): Promise<string> => (await request(`${s.url}/metrics`, { dispatcher: s.agent })).body.text();

  it(`by default a client and the service negotiate ${EXPECTED_GROUP}, counted for both faces`, async () => {
    const before = await metrics(server);
    expect(await groupSeenByClient(server.url, server.caPem)).toBe(EXPECTED_GROUP);
    const client = new EntropyClient({ url: server.url, token, ca: server.caPem });
    try {
      expect(await client.fetchOnce(1)).toHaveLength(1024);
    } finally {
      await client.close();
    }
    const after = await metrics(server);
    expect(sample(after, { face: 'entropy', group: EXPECTED_GROUP })).toBeGreaterThanOrEqual(sample(before, { face: 'entropy', group: EXPECTED_GROUP }) + 2);
    expect(sample(after, { face: 'upstream', group: EXPECTED_GROUP })).toBe(sample(before, { face: 'upstream', group: EXPECTED_GROUP }) + 1);
  });

  it('a face configured with tls.groups P-256 negotiates P-256 with a default client; a client pinned to P-256 does too', async () => {
    const before = await metrics(pinned);
    expect(await groupSeenByClient(pinned.url, pinned.caPem)).toBe('P-256');
    const client = new EntropyClient({ url: server.url, token, ca: server.caPem, tlsGroups: 'P-256' });
    try {
      await client.fetchOnce(1);
    } finally {
      await client.close();
    }
    const after = await metrics(pinned);
    expect(sample(after, { face: 'entropy', group: 'P-256' })).toBeGreaterThanOrEqual(sample(before, { face: 'entropy', group: 'P-256' }) + 2);
    expect(sample(after, { face: 'upstream', group: 'P-256' })).toBe(sample(before, { face: 'upstream', group: 'P-256' }) + 1);
  });
});

describe('tls.groups in the config', () => {
  const problem = (raw: unknown): string => {
    try {
      resolveConfig(raw, { env: {} });
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    return '';
  };
  const tls = { certFile: '/c', keyFile: '/k' };

  it('every face takes it, defaulting to the runtime list', () => {
    const config = resolveConfig(
      {
        entropy: { enabled: true, tls, source: 'upstream', upstream: { url: 'https://up.example', token: 't', tls: { groups: 'X25519' } } },
        quality: { enabled: true, tls: { ...tls, groups: 'P-256:X25519' } },
        feeder: { enabled: true, sources: [{ url: 'https://up.example', token: 't', tls: { groups: 'P-256' } }] },
      },
      { env: {} },
    );
    expect(config.entropy.tls!.groups).toBe(defaultGroups());
    expect(config.entropy.upstream!.tlsGroups).toBe('X25519');
    expect(config.quality.tls!.groups).toBe('P-256:X25519');
    expect(config.feeder.sources[0]!.tlsGroups).toBe('P-256');
  });

  it('names the key of a group the runtime does not know', () => {
    expect(problem({ entropy: { enabled: true, tls: { ...tls, groups: 'X25519:nonsense' } } })).toBe('config: entropy.tls.groups: unknown group nonsense');
    expect(problem({ quality: { enabled: true, tls: { ...tls, groups: 'X25519::P-256' } } })).toMatch(/^config: quality\.tls\.groups: must be a colon-separated list/);
    const hybrid = problem({ feeder: { enabled: true, sources: [{ url: 'https://up.example', token: 't', tls: { groups: 'X25519MLKEM768:X25519' } }] } });
    if (HYBRID) expect(hybrid).toBe('');
    else expect(hybrid).toMatch(/^config: feeder\.sources\.0\.tls\.groups: X25519MLKEM768 needs ML-KEM, which this runtime's OpenSSL 3\.0\.\d+ lacks \(Node\.js 22\.20 or later, 24 or 26/);
  });
});
