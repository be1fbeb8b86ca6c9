// The key distribution cluster end to end: three sites A, B, C, each a real KME on
// 127.0.0.1 with real mutual TLS (certificates made here with our PKI), its own SQLite
// file (A on PostgreSQL too when QENTROPY_PG_URL is set), and real inter-KME calls.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { promisify } from 'node:util';

import pino from 'pino';
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { parseKmeConfig, type KmeConfig } from '../src/config/sections/kme.js';
import { deriveKey } from '../src/kme/derive.js';
import { EtsiClient, EtsiClientError } from '../src/kme/etsi-client.js';
import { KmeSite } from '../src/kme/site.js';
import { KmeRole } from '../src/roles/kme.js';
import { systemSeedSource } from '../src/kme/seed-source.js';
import { createCertificateAuthority, issueKmeCertificate, issueSaeCertificate } from '../src/pki/certs.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import { describeEachEngine } from './helpers/databases.js';
import { KmeTestPki } from './helpers/kme-pki.js';
import { scaled } from './helpers/time.js';

const run = promisify(execFile);

interface Pem {
  certPem: string;
  keyPem: string;
}

/** Files and configs for a cluster; sites are started and stopped by the tests. */
class Cluster extends KmeTestPki {
  sites: Record<string, KmeSite> = {};
  private clients: EtsiClient[] = [];

  constructor() {
    super('qentropy-kme-');
  }


  config(id: string, peers: Record<string, { pskFile?: string; url?: string; ratchet?: boolean }>, extra: Record<string, unknown> = {}): KmeConfig {
    return parseKmeConfig({
      id,
      listen: { host: '127.0.0.1', port: this.ports[id] },
      tls: { cert: path.join(this.dir, `kme-${id}.crt`), key: path.join(this.dir, `kme-${id}.key`), ca: path.join(this.dir, 'ca.crt') },
      storage: `sqlite:${path.join(this.dir, `site-${id}.db`)}`,
      siteKeyFile: path.join(this.dir, `site-${id}.key`),
      peers: Object.fromEntries(Object.entries(peers).map(([p, o]) => [p, { ...o, url: o.url ?? this.url(p) }])),
      seedSource: 'system',
      ...extra,
    });
  }

  async start(id: string, config: KmeConfig, db?: Db): Promise<KmeSite> {
    const site = await KmeSite.create(config, { seedSource: systemSeedSource(), ...(db ? { db } : {}) });
    await site.start();
    this.sites[id] = site;
    return site;
  }

  async stop(id: string): Promise<void> {
    await this.sites[id]?.stop();
    delete this.sites[id];
  }

  client(site: string, cert: Pem, connections = 4): EtsiClient {
    const c = new EtsiClient({ url: this.url(site), cert: cert.certPem, key: cert.keyPem, ca: this.ca.certPem, connections });
    this.clients.push(c);
    return c;
  }

  sae(site: string, sae: string): EtsiClient {
    return this.client(site, this.saeCerts[sae]!);
  }

  async teardown(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close()));
    for (const id of Object.keys(this.sites)) await this.stop(id);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

async function rowCount(db: Db, where = '1 = 1', params: unknown[] = []): Promise<number> {
  const [r] = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM kme_keys WHERE ${where}`, params as never[]);
  return Number(r!.n);
}

async function expectEtsiError(p: Promise<unknown>, status: number): Promise<EtsiClientError> {
  const err = await p.then(
    () => {
      throw new Error(`expected ${status}, got 200`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EtsiClientError);
  const e = err as EtsiClientError;
  expect(e.status, JSON.stringify(e.body)).toBe(status);
  const body = e.body as { message?: unknown; details?: unknown };
  expect(typeof body.message).toBe('string');
  expect(Array.isArray(body.details)).toBe(true);
  return e;
}

/** One key's metadata as site A delivers it to B over a link without a PSK. */
/** A delivery A could send B on their link, whose ratchet `link` (suite, epoch) is in force. */
function deliveryFromAToB(keyId: string, seed: Buffer, link: { suite: string; epoch: number }) {
  return {
    key_ID: keyId,
    size: 256,
    seed: seed.toString('base64'),
    origin: 'A',
    peer: 'B',
    created: Date.now(),
    suite: link.suite,
    epoch: link.epoch,
    master_SAE_ID: 'a1',
    slave_SAE_IDs: [] as string[],
  };
}

const SAES = { a1: 'A', a2: 'A', b1: 'B', b2: 'B', c1: 'C' };

describeEachEngine('kme cluster of three sites', (engine) => {
  const cluster = new Cluster();
  /** The ratchet suite and epoch B holds for its link with A (what A's deliveries carry now). */
  const linkOfB = (): { suite: string; epoch: number } =>
    cluster.sites.B!.pq.linkStatus('A').ratchet as { suite: string; epoch: number };
  let dbA: Db;
  let pskFile: string;

  beforeAll(async () => {
    await cluster.setup(['A', 'B', 'C', 'D'], SAES);
    pskFile = cluster.file('psk-A-C', Buffer.from(crypto.getRandomValues(new Uint8Array(32))));
    // Site A's store is the engine under test; B and C use their own SQLite files.
    dbA = await engine.open();
    const saes = { a2: 'A', b1: 'B', b2: 'B', c1: 'C' };
    // One SAE may use a whole link here (maxKeyCountPerSae = maxKeyCount): these tests are
    // about the link's limits; the per-SAE share has its own tests in kme-interop.test.ts.
    await cluster.start('A', cluster.config('A', { B: {}, C: { pskFile }, D: {} }, { saes, maxKeyPerRequest: 64, maxKeyCountPerSae: 100_000 }), dbA);
    await cluster.start('B', cluster.config('B', { A: {}, C: {} }, { saes: { a1: 'A' }, maxKeyCountPerSae: 100_000 }));
    await cluster.start('C', cluster.config('C', { A: { pskFile } }, { maxKeyCount: 40, maxKeyCountPerSae: 40 }));
  });
  afterAll(async () => {
    await cluster.teardown();
    await dbA?.close();
  });
  // A second instance of A on A's database (some tests start one) re-keys the A–B ratchet
  // when it starts; A follows from the database at its next maintenance pass. Two such
  // re-keys in a row retire the epoch A still uses, so wait for A to follow before the next
  // test (docs/post-quantum.md, "State at rest").
  afterEach(async () => {
    const epoch = (site: string, peer: string) => (cluster.sites[site]?.pq.linkStatus(peer).ratchet as { epoch: number | null } | null)?.epoch;
    await waitFor(async () => !cluster.sites.A || !cluster.sites.B || epoch('A', 'B') === epoch('B', 'A'), 15_000);
  });

  it('keys made at A for B are retrieved at B byte-identical, by GET and by POST', async () => {
    const a1 = cluster.sae('A', 'a1');
    const b1 = cluster.sae('B', 'b1');
    const viaGet = await a1.call('GET', '/api/v1/keys/B/enc_keys?number=2&size=512');
    expect(viaGet.status).toBe(200);
    const getKeys = (viaGet.body as { keys: Array<{ key_ID: string; key: string }> }).keys;
    const postKeys = await a1.encKeys('B', { number: 3 });
    expect(getKeys).toHaveLength(2);
    expect(postKeys).toHaveLength(3);
    for (const k of getKeys) expect(Buffer.from(k.key, 'base64')).toHaveLength(64);
    for (const k of postKeys) expect(Buffer.from(k.key, 'base64')).toHaveLength(32); // default 256 bits
    const all = [...getKeys, ...postKeys];
    expect(new Set(all.map((k) => k.key_ID)).size).toBe(5);
    for (const k of all) expect(k.key_ID).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    // GET dec_keys for one, POST for the rest; {id} is the origin site.
    const one = await b1.call('GET', `/api/v1/keys/A/dec_keys?key_ID=${getKeys[0]!.key_ID}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ keys: [getKeys[0]] });
    const rest = await b1.decKeys('A', all.slice(1).map((k) => k.key_ID));
    expect(rest).toEqual(all.slice(1));
  });

  it('the origin never serves a key again (§5.3): its master SAE and other SAEs of A get "not found", B still has it', async () => {
    const [k] = await cluster.sae('A', 'a1').encKeys('B');
    for (const sae of ['a1', 'a2']) {
      const e = await expectEtsiError(cluster.sae('A', sae).decKeys('B', [k!.key_ID]), 400);
      expect(e.body).toEqual({ message: 'one or more keys specified are not found on KME', details: [{ key_ID: k!.key_ID }] });
    }
    // Once the answer has left, the origin keeps no row of the key at all.
    await waitFor(async () => (await rowCount(dbA, 'key_id = $1', [k!.key_ID])) === 0);
    expect(await cluster.sae('B', 'b1').decKeys('A', [k!.key_ID])).toEqual([k]);
  });

  it('status reports the link, the limits and, as stored_key_count, the keys enc_keys can still deliver (ETSI Table 9)', async () => {
    const a1 = cluster.sae('A', 'a1');
    const before = (await a1.status('B')) as Record<string, number>;
    expect(before).toMatchObject({
      source_KME_ID: 'A',
      target_KME_ID: 'B',
      master_SAE_ID: 'a1',
      key_size: 256,
      max_key_count: 100_000,
      max_key_per_request: 64,
      max_key_size: 4096,
      min_key_size: 64,
      max_SAE_ID_count: 3, // b1, b2 and c1: the SAEs A knows at its peers
    });
    // A site-addressed path names no slave SAE (ETSI's slave_SAE_ID is an SAE ID).
    expect(before).not.toHaveProperty('slave_SAE_ID');
    const held = (s: Record<string, unknown>): number => (s.status_extension as { link_keys_held: number }).link_keys_held;
    // What the caller can get: the least of this site's room, the peer's room on the link and its share there.
    const canGet = (s: Record<string, unknown>): number => {
      const peer = (s.status_extension as { peer_room: { link: number; sae: number } }).peer_room;
      return Math.min(100_000 - held(s), peer.link, peer.sae);
    };
    expect(before.stored_key_count).toBe(canGet(before));
    // Held at B, the keys A made for B use up what B can still deliver on the link.
    const b1 = cluster.sae('B', 'b1');
    const atB = await b1.status('A');
    const keys = await a1.encKeys('B', { number: 4 });
    const afterB = await b1.status('A');
    expect(held(afterB)).toBe(held(atB) + 4);
    expect(afterB.stored_key_count).toBe(canGet(afterB));
    // ... and so does A's view of B's room, which A's status now reports.
    const fromA = await a1.status('B');
    expect((fromA.status_extension as { peer_room: { link: number } }).peer_room.link).toBe(100_000 - held(afterB));
    // An ETSI-style SAE ID as {id} names its site.
    expect(await a1.status('b1')).toMatchObject({ target_KME_ID: 'B', slave_SAE_ID: 'b1' });
    // Retrieval at the peer gives the room back.
    await cluster.sae('B', 'b2').decKeys('A', keys.map((k) => k.key_ID));
    const after = await b1.status('A');
    expect(held(after)).toBe(held(atB));
    expect(after.stored_key_count).toBe(canGet(after));
  });

  it('a fresh link reads the full max_key_count; a full store reads 0 and enc_keys gets 503', async () => {
    // C's store holds at most 40 keys per link; B-C is fresh at C.
    const c1 = cluster.sae('C', 'c1');
    const fresh = await c1.status('A');
    expect(fresh.max_key_count).toBe(40);
    const room = fresh.stored_key_count as number;
    expect(room).toBe(40 - (fresh.status_extension as { link_keys_held: number }).link_keys_held);
    const made = await cluster.sae('A', 'a1').encKeys('C', { number: room });
    expect(await c1.status('A')).toMatchObject({ stored_key_count: 0, status_extension: { link_keys_held: 40 } });
    await expectEtsiError(cluster.sae('A', 'a1').encKeys('C'), 503);
    await c1.decKeys('A', made.map((k) => k.key_ID));
    expect((await c1.status('A')).stored_key_count).toBe(room);
  });

  it('a key for a named slave SAE is only for that SAE at the peer', async () => {
    const [k] = await cluster.sae('A', 'a1').encKeys('b1');
    await expectEtsiError(cluster.sae('B', 'b2').decKeys('A', [k!.key_ID]), 401);
    expect(await cluster.sae('B', 'b1').decKeys('a1', [k!.key_ID])).toEqual([k]);
  });

  it('additional_slave_SAE_IDs: each named SAE retrieves the key once', async () => {
    const [k] = await cluster.sae('A', 'a1').encKeys('B', { additionalSlaveSaeIds: ['b1', 'b2'] });
    expect(await cluster.sae('B', 'b1').decKeys('A', [k!.key_ID])).toEqual([k]);
    await expectEtsiError(cluster.sae('B', 'b1').decKeys('A', [k!.key_ID]), 401);
    expect(await cluster.sae('B', 'b2').decKeys('A', [k!.key_ID])).toEqual([k]);
    await expectEtsiError(cluster.sae('B', 'b2').decKeys('A', [k!.key_ID]), 400);
  });

  it('keys made at A for C (a PSK link) are retrievable at C and not at B; B’s SAE gets 401 asking A', async () => {
    const [k] = await cluster.sae('A', 'a1').encKeys('C', { size: 128 });
    await expectEtsiError(cluster.sae('B', 'b1').decKeys('A', [k!.key_ID]), 400);
    // An SAE of B presenting itself at A for A's key meant for C.
    await expectEtsiError(cluster.sae('A', 'b1').decKeys('C', [k!.key_ID]), 401);
    expect(await cluster.sae('C', 'c1').decKeys('A', [k!.key_ID])).toEqual([k]);
  });

  it('a PSK mismatch is refused by the peer: 503 and nothing stored at either end', async () => {
    // B's link to C has no PSK; a C that believes in one refuses B's deliveries.
    const other = cluster.file('psk-other', Buffer.alloc(32, 7));
    const cfg = cluster.config('C', { A: { pskFile }, B: { pskFile: other } }, { maxKeyCount: 40, maxKeyCountPerSae: 40 });
    await cluster.stop('C');
    await cluster.start('C', cfg);
    const b1 = cluster.sae('B', 'b1');
    const e = await expectEtsiError(b1.encKeys('C'), 503);
    expect(JSON.stringify(e.body)).toMatch(/suite|PSK/);
    expect(await b1.status('C')).toMatchObject({ status_extension: { link_keys_held: 0 } });
    expect(await cluster.sae('C', 'c1').status('B')).toMatchObject({ stored_key_count: 40, status_extension: { link_keys_held: 0 } });
  });

  it('malformed requests get 400 and store nothing', async () => {
    const a1 = cluster.sae('A', 'a1');
    const before = await rowCount(dbA);
    const cases: Array<[string, string, unknown]> = [
      ['POST', '/api/v1/keys/B/enc_keys', '{"number": 1,'],
      ['POST', '/api/v1/keys/B/enc_keys', { number: 1_000_000 }],
      ['POST', '/api/v1/keys/B/enc_keys', { number: 65 }],
      ['POST', '/api/v1/keys/B/enc_keys', { number: 0 }],
      ['POST', '/api/v1/keys/B/enc_keys', { number: 1.5 }],
      ['POST', '/api/v1/keys/B/enc_keys', { number: '2' }],
      ['POST', '/api/v1/keys/B/enc_keys', { size: 260 }],
      ['POST', '/api/v1/keys/B/enc_keys', { size: 8 }],
      ['POST', '/api/v1/keys/B/enc_keys', { size: 8192 }],
      ['POST', '/api/v1/keys/B/enc_keys', { number: 1, colour: 'red' }],
      ['POST', '/api/v1/keys/B/enc_keys', { extension_mandatory: [{ route_type: 'direct' }] }],
      ['POST', '/api/v1/keys/B/enc_keys', { additional_slave_SAE_IDs: ['ghost'] }],
      ['POST', '/api/v1/keys/B/enc_keys', [1, 2]],
      ['GET', '/api/v1/keys/B/enc_keys?number=1e3', undefined],
      ['GET', '/api/v1/keys/B/enc_keys?size=255', undefined],
      ['GET', '/api/v1/keys/B/enc_keys?numbr=2', undefined],
      ['GET', '/api/v1/keys/NOPE/enc_keys', undefined],
      ['GET', '/api/v1/keys/A/enc_keys', undefined],
      ['POST', '/api/v1/keys/A/dec_keys', { key_IDs: [{ key_ID: '0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e01' }, { key_ID: '0B7F0A55-5C28-4A36-8A8D-5A2A2F5F5E01' }] }],
      ['POST', '/api/v1/keys/B/dec_keys', { key_IDs: [{ key_ID: 'not-a-uuid' }] }],
      ['POST', '/api/v1/keys/B/dec_keys', { key_IDs: [{ key_ID: '0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e01' }], key_IDs_extension: 'x' }],
      ['POST', '/api/v1/keys/B/dec_keys', { key_IDs: [{ key_ID: '0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e01', key_ID_extension: [1] }] }],
      ['POST', '/api/v1/keys/B/dec_keys', { key_IDs: [{ key_ID: '0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e01' }] }],
      ['GET', '/api/v1/keys/B/dec_keys', undefined],
    ];
    for (const [method, p, body] of cases) {
      const res = await a1.call(method as 'GET' | 'POST', p, body);
      expect(res.status, `${method} ${p} ${JSON.stringify(body)} -> ${JSON.stringify(res.body)}`).toBe(400);
      const b = res.body as { message: unknown; details: unknown };
      expect(typeof b.message).toBe('string');
      expect(Array.isArray(b.details)).toBe(true);
    }
    expect(await rowCount(dbA)).toBe(before);
  });

  it("uses ETSI's fixed messages where §6 gives them", async () => {
    const a1 = cluster.sae('A', 'a1');
    expect(await a1.call('POST', '/api/v1/keys/B/enc_keys', { size: 260 })).toEqual({
      status: 400,
      body: { message: 'size shall be a multiple of 8', details: [{ field: 'size', size: 260 }] },
    });
    expect(await a1.call('GET', '/api/v1/keys/B/enc_keys?size=252')).toMatchObject({ status: 400, body: { message: 'size shall be a multiple of 8' } });
    expect(await a1.call('POST', '/api/v1/keys/B/enc_keys', { extension_mandatory: [{ abc_route_type: 'direct' }] })).toEqual({
      status: 400,
      body: { message: 'not all extension_mandatory parameters are supported', details: [{ extension_mandatory_unsupported: 'abc_route_type is not supported' }] },
    });
    const unknown = '0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e09';
    expect(await cluster.sae('B', 'b1').call('GET', `/api/v1/keys/A/dec_keys?key_ID=${unknown}`)).toEqual({
      status: 400,
      body: { message: 'one or more keys specified are not found on KME', details: [{ key_ID: unknown }] },
    });
  });

  it('a dec_keys path naming another master than the key’s is 400 "not found", exactly as for an unknown key', async () => {
    const [k] = await cluster.sae('A', 'a1').encKeys('B');
    const b1 = cluster.sae('B', 'b1');
    const unknown = '0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e0a';
    const notFound = (id: string) => ({ status: 400, body: { message: 'one or more keys specified are not found on KME', details: [{ key_ID: id }] } });
    // C is a peer of B, but the key was made at A: the answer must not reveal that it exists.
    expect(await b1.call('GET', `/api/v1/keys/C/dec_keys?key_ID=${k!.key_ID}`)).toEqual(notFound(k!.key_ID));
    expect(await b1.call('GET', `/api/v1/keys/C/dec_keys?key_ID=${unknown}`)).toEqual(notFound(unknown));
    expect(await b1.call('POST', '/api/v1/keys/C/dec_keys', { key_IDs: [{ key_ID: k!.key_ID }] })).toEqual(notFound(k!.key_ID));
    // Nothing was consumed: the right master in the path gets it.
    expect(await b1.decKeys('a1', [k!.key_ID])).toEqual([k]);
  });

  it("dec_keys accepts ETSI's extension members and a master_SAE_ID per item when it names the key's master", async () => {
    const keys = await cluster.sae('A', 'a1').encKeys('B', { number: 4 });
    const b1 = cluster.sae('B', 'b1');
    // QURSA C wrapper, QuKayDee mode: master_SAE_ID inside each item.
    expect(await b1.call('POST', '/api/v1/keys/A/dec_keys', { key_IDs: [{ key_ID: keys[0]!.key_ID, master_SAE_ID: 'a1' }] })).toEqual({ status: 200, body: { keys: [keys[0]] } });
    // Table 12: key_ID_extension per item, key_IDs_extension on the request.
    expect(
      await b1.call('POST', '/api/v1/keys/A/dec_keys', {
        key_IDs: [{ key_ID: keys[1]!.key_ID, key_ID_extension: { note: 1 } }],
        key_IDs_extension: { route: 'any' },
      }),
    ).toEqual({ status: 200, body: { keys: [keys[1]] } });
    // A master_SAE_ID that is not the key's master: "not found", nothing consumed (the other key of the request neither).
    const wrong = await b1.call('POST', '/api/v1/keys/A/dec_keys', {
      key_IDs: [{ key_ID: keys[2]!.key_ID }, { key_ID: keys[3]!.key_ID, master_SAE_ID: 'a2' }],
    });
    expect(wrong).toEqual({ status: 400, body: { message: 'one or more keys specified are not found on KME', details: [{ key_ID: keys[3]!.key_ID }] } });
    expect(await b1.decKeys('A', [keys[2]!.key_ID, keys[3]!.key_ID])).toEqual(keys.slice(2));
  });

  it('additional_slave_SAE_IDs naming an unknown SAE or an SAE of this site: 400, nothing stored at any site', async () => {
    const a1 = cluster.sae('A', 'a1');
    const held = async () => ({ a: await rowCount(dbA), b: await cluster.sites.B!.service.store.countAll(), c: await cluster.sites.C!.service.store.countAll() });
    const before = await held();
    for (const extra of [['ghost'], ['b1', 'ghost'], ['c1', 'ghost'], ['a2']]) {
      const res = await a1.call('POST', '/api/v1/keys/B/enc_keys', { number: 2, additional_slave_SAE_IDs: extra });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect((res.body as { message: string }).message).toMatch(/additional_slave_SAE_IDs/);
    }
    expect(await held()).toEqual(before);
    // max_SAE_ID_count says how many a request may name: the SAEs registered at A to its peers.
    expect((await a1.status('B')).max_SAE_ID_count).toBe(3); // b1, b2, c1
    expect((await a1.status('b1')).max_SAE_ID_count).toBe(2); // b2, c1
  });

  it('multicast to SAEs at B and at C (a PSK link): the same key at both sites, each named SAE gets it once', async () => {
    const keys = await cluster.sae('A', 'a1').encKeys('b1', { number: 3, additionalSlaveSaeIds: ['b2', 'c1'] });
    const ids = keys.map((k) => k.key_ID);
    expect(await cluster.sae('C', 'c1').decKeys('A', ids)).toEqual(keys);
    await expectEtsiError(cluster.sae('C', 'c1').decKeys('A', ids), 400);
    expect(await cluster.sae('B', 'b1').decKeys('a1', ids)).toEqual(keys);
    expect(await cluster.sae('B', 'b2').decKeys('A', ids)).toEqual(keys);
    // With the site as path, any one SAE of B and the named SAE of C.
    const [k] = await cluster.sae('A', 'a1').encKeys('B', { additionalSlaveSaeIds: ['c1'] });
    expect(await cluster.sae('B', 'b2').decKeys('A', [k!.key_ID])).toEqual([k]);
    expect(await cluster.sae('C', 'c1').decKeys('A', [k!.key_ID])).toEqual([k]);
  });

  it('a wrapped (multicast) delivery must say so in its suite; the peer stores wrap XOR its own derivation', async () => {
    const asA = cluster.client('B', cluster.kmeCerts.A!);
    const seed = Buffer.alloc(32, 5);
    const wrap = Buffer.alloc(32, 0xa5);
    const link = linkOfB();
    const meta = { ...deliveryFromAToB('7d3c2a10-0f4e-4b8e-9a51-2f7b0c1d2e51', seed, link), wrap: wrap.toString('base64') };
    // An older peer ignores `wrap`; this suite check is what makes it refuse instead.
    expect((await asA.call('POST', '/internal/v1/keys/deliver', { keys: [meta] })).status).toBe(400);
    const { wrap: _omitted, ...unwrapped } = meta;
    // Unwrapped under a '+wrap' suite: not the link's suite, refused by the ratchet (503).
    expect((await asA.call('POST', '/internal/v1/keys/deliver', { keys: [{ ...unwrapped, suite: `${link.suite}+wrap` }] })).status).toBe(503);
    expect((await asA.call('POST', '/internal/v1/keys/deliver', { keys: [{ ...meta, suite: `${link.suite}+wrap` }] })).status).toBe(200);
    // B's pad is its own derivation under the link's current epoch secret.
    const { secret } = await cluster.sites.B!.pq.ratchets.get('A')!.forReceiving(link.suite, link.epoch, 1);
    const derived = deriveKey(seed, secret, { keyId: meta.key_ID, size: 256, origin: 'A', peer: 'B' });
    const expected = Buffer.from(derived.map((b, i) => b ^ wrap[i]!));
    expect(await cluster.sae('B', 'b1').decKeys('A', [meta.key_ID])).toEqual([{ key_ID: meta.key_ID, key: expected.toString('base64') }]);
  });

  it('multicast is atomic: with C down, 503 and the key is at no site', async () => {
    const cfgC = cluster.sites.C!.config;
    const atB = await cluster.sites.B!.service.store.countAll();
    const atA = await rowCount(dbA);
    await cluster.stop('C');
    try {
      const e = await expectEtsiError(cluster.sae('A', 'a1').encKeys('B', { number: 2, additionalSlaveSaeIds: ['c1'] }), 503);
      expect(JSON.stringify(e.body)).toMatch(/C/);
      expect(await rowCount(dbA)).toBe(atA);
      // B stored them in phase 2 and is told to cancel them.
      await waitFor(async () => (await cluster.sites.B!.service.store.countAll()) === atB);
    } finally {
      await cluster.start('C', cfgC);
    }
  });

  it('POST enc_keys with Content-Type: application/json and an empty body is a request with no options', async () => {
    const res = await cluster.sae('A', 'a1').call('POST', '/api/v1/keys/B/enc_keys', '');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const keys = (res.body as { keys: Array<{ key_ID: string; key: string }> }).keys;
    expect(keys).toHaveLength(1);
    expect(Buffer.from(keys[0]!.key, 'base64')).toHaveLength(32);
    expect(await cluster.sae('B', 'b1').decKeys('A', [keys[0]!.key_ID])).toEqual(keys);
    // A framework refusal (malformed JSON) says what is wrong, without the framework's codes.
    const bad = await cluster.sae('A', 'a1').call('POST', '/api/v1/keys/B/enc_keys', '{"number":');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ details: [] });
    expect(JSON.stringify(bad.body)).not.toMatch(/FST_/);
  });

  it('a dec_keys request with one unknown key retrieves none of them', async () => {
    const keys = await cluster.sae('A', 'a1').encKeys('B', { number: 2 });
    const ids = [keys[0]!.key_ID, '0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e01', keys[1]!.key_ID];
    const e = await expectEtsiError(cluster.sae('B', 'b1').decKeys('A', ids), 400);
    expect(JSON.stringify(e.body)).toContain('0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e01');
    expect(await cluster.sae('B', 'b1').decKeys('A', [keys[0]!.key_ID, keys[1]!.key_ID])).toEqual(keys);
  });

  it('SAEs of other sites and KME certificates cannot use the ETSI API of a site (401)', async () => {
    await expectEtsiError(cluster.sae('A', 'b1').encKeys('C'), 401);
    await expectEtsiError(cluster.sae('A', 'b1').status('B'), 401);
    await expectEtsiError(cluster.client('A', cluster.kmeCerts.B!).encKeys('B'), 401);
  });

  it('the inter-KME path refuses SAE certificates and KMEs that are not peers (401)', async () => {
    const body = { keys: [{ key_ID: '0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e01' }] };
    for (const [who, cert] of [
      ['sae b1', cluster.saeCerts.b1!],
      ['kme C (not a peer of... B is; D is not a peer of B)', cluster.kmeCerts.D!],
    ] as const) {
      for (const p of ['deliver', 'cancel', 'retrieved']) {
        const res = await cluster.client('B', cert).call('POST', `/internal/v1/keys/${p}`, body);
        expect(res.status, `${who} ${p}`).toBe(401);
      }
    }
  });

  it('deliveries are idempotent; a conflicting one is refused; a cancel drops the key and later copies', async () => {
    const asA = cluster.client('B', cluster.kmeCerts.A!);
    const meta = deliveryFromAToB('7d3c2a10-0f4e-4b8e-9a51-2f7b0c1d2e3f', Buffer.alloc(32, 1), linkOfB());
    const dbB = await openDatabase({ url: cluster.sites.B!.config.storage! });
    try {
      expect((await asA.call('POST', '/internal/v1/keys/deliver', { keys: [meta] })).status).toBe(200);
      expect((await asA.call('POST', '/internal/v1/keys/deliver', { keys: [meta] })).status).toBe(200);
      expect(await rowCount(dbB, 'key_id = $1', [meta.key_ID])).toBe(1);
      const clash = await asA.call('POST', '/internal/v1/keys/deliver', { keys: [{ ...meta, seed: Buffer.alloc(32, 2).toString('base64') }] });
      expect(clash.status).toBe(409);
      expect((await asA.call('POST', '/internal/v1/keys/cancel', { key_IDs: [meta.key_ID] })).status).toBe(200);
      expect(await rowCount(dbB, 'key_id = $1', [meta.key_ID])).toBe(0);
      expect((await asA.call('POST', '/internal/v1/keys/deliver', { keys: [meta] })).status).toBe(200);
      expect(await rowCount(dbB, 'key_id = $1', [meta.key_ID])).toBe(0);
      // A wrong origin (A claiming to deliver C's key) is refused.
      const forged = await asA.call('POST', '/internal/v1/keys/deliver', { keys: [{ ...meta, key_ID: '7d3c2a10-0f4e-4b8e-9a51-2f7b0c1d2e40', origin: 'C' }] });
      expect(forged.status).toBe(400);
    } finally {
      await dbB.close();
    }
  });

  it('peer down during enc_keys: 503 and no key left behind at either site', async () => {
    const cfgC = cluster.sites.C!.config;
    const atA = await rowCount(dbA, "peer = 'C'");
    // The keys held on the link (the rest of the extension is the link's TLS and ratchet state).
    const heldAtC = async () => ((await cluster.sae('C', 'c1').status('A')).status_extension as { link_keys_held: number }).link_keys_held;
    const atC = await heldAtC();
    await cluster.stop('C');
    const a1 = cluster.sae('A', 'a1');
    const e = await expectEtsiError(a1.encKeys('C', { number: 3 }), 503);
    expect(e.message).toMatch(/C/);
    expect(await rowCount(dbA, "peer = 'C'")).toBe(atA);
    await cluster.start('C', cfgC);
    expect(await heldAtC()).toBe(atC);
    // And the link works again.
    const [k] = await a1.encKeys('C');
    expect(await cluster.sae('C', 'c1').decKeys('A', [k!.key_ID])).toEqual([k]);
  });

  it('an SAE that hangs up before its keys are answered: the peer is told to cancel them', async () => {
    // A second instance of A reaches B through a proxy that holds each chunk 300 ms, so the
    // client is gone before the delivery is confirmed.
    const net = await import('node:net');
    const proxy = net.createServer((inbound) => {
      const outbound = net.connect(cluster.ports.B!, '127.0.0.1');
      const delayed = (to: import('node:net').Socket) => (d: Buffer) => setTimeout(() => to.writable && to.write(d), 300);
      inbound.on('data', delayed(outbound));
      outbound.on('data', delayed(inbound));
      const close = () => setTimeout(() => (inbound.destroy(), outbound.destroy()), 350);
      inbound.on('close', close);
      outbound.on('close', close);
      inbound.on('error', () => undefined);
      outbound.on('error', () => undefined);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const cfg = cluster.config('A', { B: { url: `https://127.0.0.1:${(proxy.address() as { port: number }).port}` } }, { listen: { host: '127.0.0.1', port: 0 } });
    const second = await KmeSite.create(cfg, { seedSource: systemSeedSource(), db: await engine.open() });
    await second.start();
    const atB = await cluster.sites.B!.service.store.countAll();
    const atA = await rowCount(dbA);
    try {
      const socket = tlsConnect({ host: '127.0.0.1', port: second.port, cert: cluster.saeCerts.a1!.certPem, key: cluster.saeCerts.a1!.keyPem, ca: cluster.ca.certPem });
      await new Promise<void>((resolve, reject) => {
        socket.on('secureConnect', () => {
          socket.write(`GET /api/v1/keys/B/enc_keys?number=3 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
          setTimeout(() => {
            socket.destroy();
            resolve();
          }, 100);
        });
        socket.on('error', reject);
      });
      // B stores the three keys (the delivery goes on), then drops them when A's cancel arrives.
      await waitFor(async () => (await cluster.sites.B!.service.store.countAll()) === atB + 3);
      await waitFor(async () => (await cluster.sites.B!.service.store.countAll()) === atB, 10_000);
      expect(await rowCount(dbA)).toBe(atA);
    } finally {
      await second.stop();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('orphaned: a peer keeps keys whose answer the origin may have lost only orphanKeyTtlSeconds, and only for their origin', async () => {
    const asA = cluster.client('B', cluster.kmeCerts.A!);
    const asC = cluster.client('B', cluster.kmeCerts.C!);
    const [k] = await cluster.sae('A', 'a1').encKeys('B');
    const dbB = cluster.sites.B!.service.store.db;
    const expiresOf = async () => Number((await dbB.query<{ expires: number }>('SELECT expires FROM kme_keys WHERE key_id = $1', [k!.key_ID]))[0]!.expires);
    const day = await expiresOf();
    expect(day).toBeGreaterThan(Date.now() + 86_000_000);
    expect(await asC.call('POST', '/internal/v1/keys/orphaned', { key_IDs: [k!.key_ID] })).toMatchObject({ status: 200, body: { shortened: 0 } });
    expect(await expiresOf()).toBe(day);
    const before = Date.now();
    expect(await asA.call('POST', '/internal/v1/keys/orphaned', { key_IDs: [k!.key_ID] })).toMatchObject({ status: 200, body: { shortened: 1 } });
    const soon = await expiresOf();
    expect(soon).toBeGreaterThanOrEqual(before + 300_000);
    expect(soon).toBeLessThanOrEqual(Date.now() + 300_000);
    // Still retrievable meanwhile.
    expect(await cluster.sae('B', 'b1').decKeys('A', [k!.key_ID])).toEqual([k]);
  });

  it('a peer that never answers: 503 after the timeout, the pending key removed and a cancel queued', async () => {
    // D's address is a TLS server with D's certificate that accepts requests and never replies.
    const tls = await import('node:tls');
    const sockets: import('node:tls').TLSSocket[] = [];
    let closing = false;
    const hole = tls.createServer({ cert: cluster.kmeCerts.D!.certPem, key: cluster.kmeCerts.D!.keyPem, ca: cluster.ca.certPem, requestCert: true, minVersion: 'TLSv1.3' }, (s) => {
      if (closing) return void s.destroy();
      sockets.push(s);
      s.on('data', () => undefined);
    });
    await new Promise<void>((r) => hole.listen(cluster.ports.D, '127.0.0.1', () => r()));
    // A second instance of A with a short peer timeout, on A's database.
    // Without the ratchet on the link to D, so the call that times out is the delivery itself.
    const cfg = cluster.config('A', { B: {}, C: { pskFile }, D: { ratchet: false } }, { peerTimeoutMs: 1000, listen: { host: '127.0.0.1', port: 0 } });
    const impatient = await KmeSite.create(cfg, { seedSource: systemSeedSource(), db: await engine.open() });
    const url = await impatient.start();
    const a1 = new EtsiClient({ url, cert: cluster.saeCerts.a1!.certPem, key: cluster.saeCerts.a1!.keyPem, ca: cluster.ca.certPem });
    try {
      const started = Date.now();
      await expectEtsiError(a1.encKeys('D', { number: 2 }), 503);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(await rowCount(dbA, "peer = 'D'")).toBe(0);
      const [queued] = await dbA.query<{ n: number }>("SELECT COUNT(*) AS n FROM kme_outbox WHERE peer = 'D' AND kind = 'cancel'");
      expect(Number(queued!.n)).toBe(2);
    } finally {
      closing = true;
      await a1.close();
      sockets.forEach((s) => s.destroy());
      await impatient.stop();
      sockets.forEach((s) => s.destroy());
      await new Promise((r) => hole.close(r));
    }
  });

  it('store full at the peer: 503 and nothing stored at either end', async () => {
    const a1 = cluster.sae('A', 'a1');
    const before = await rowCount(dbA, "peer = 'C'");
    // What C holds and can still take on the link (the ratchet may have counted the refused keys).
    const capacity = async () => {
      const { stored_key_count, status_extension } = await cluster.sae('C', 'c1').status('A');
      return { stored_key_count, link_keys_held: (status_extension as { link_keys_held: number }).link_keys_held };
    };
    const atC = await capacity();
    await expectEtsiError(a1.encKeys('C', { number: 41 }), 503);
    expect(await rowCount(dbA, "peer = 'C'")).toBe(before);
    expect(await capacity()).toEqual(atC);
  });

  it('no client certificate, an expired one, or one from another CA: refused at the handshake', async () => {
    const now = Date.now();
    const expired = await issueSaeCertificate(cluster.ca, { saeId: 'a1', site: 'A', notBefore: new Date(now - 10 * 86_400_000), notAfter: new Date(now - 86_400_000) });
    const otherCa = await createCertificateAuthority();
    const foreign = await issueSaeCertificate(otherCa, { saeId: 'a1', site: 'A' });
    const foreignKme = await issueKmeCertificate(otherCa, { kmeId: 'B', hosts: ['127.0.0.1'] });
    for (const cert of [expired, foreign]) {
      const err = await cluster.client('A', cert).status('B').then(() => null, (e: EtsiClientError) => e);
      expect(err).toBeInstanceOf(EtsiClientError);
      expect(err!.status).toBeUndefined(); // no HTTP response at all
    }
    const foreignPeer = await cluster.client('A', foreignKme).call('POST', '/internal/v1/keys/deliver', {}).then(() => null, (e: Error) => e);
    expect(foreignPeer).toBeInstanceOf(EtsiClientError);
    const bare = new Agent({ connect: { ca: cluster.ca.certPem, minVersion: 'TLSv1.3' } });
    try {
      await expect(request(`${cluster.url('A')}/api/v1/keys/B/status`, { dispatcher: bare })).rejects.toThrow();
    } finally {
      await bare.close();
    }
  });

  it('curl as an independent client: enc_keys at A, dec_keys at B', async () => {
    const f = (n: string): string => path.join(cluster.dir, n);
    const { stdout: enc } = await run('curl', ['-sS', '--fail-with-body', '--cert', f('sae-a1.crt'), '--key', f('sae-a1.key'), '--cacert', f('ca.crt'), `${cluster.url('A')}/api/v1/keys/B/enc_keys?number=2&size=256`]);
    const made = JSON.parse(enc) as { keys: Array<{ key_ID: string; key: string }> };
    expect(made.keys).toHaveLength(2);
    const body = JSON.stringify({ key_IDs: made.keys.map((k) => ({ key_ID: k.key_ID })) });
    const { stdout: dec } = await run('curl', [
      '-sS', '--fail-with-body', '--cert', f('sae-b1.crt'), '--key', f('sae-b1.key'), '--cacert', f('ca.crt'),
      '-H', 'Content-Type: application/json', '-d', body, `${cluster.url('B')}/api/v1/keys/A/dec_keys`,
    ]);
    expect(JSON.parse(dec)).toEqual(made);
    // curl without a client certificate gets no HTTP answer.
    const noCert = await run('curl', ['-sS', '--cacert', f('ca.crt'), `${cluster.url('A')}/api/v1/keys/B/status`]).then(() => 0, (e: { code: number }) => e.code);
    expect(noCert).not.toBe(0);
  });

  it('1,000 concurrent enc_keys across two sites: every key retrievable at the peer exactly once', async () => {
    const a = cluster.client('A', cluster.saeCerts.a1!, 32);
    const b = cluster.client('B', cluster.saeCerts.b1!, 32);
    const made = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => (i % 2 === 0 ? a.encKeys('B').then((k) => ({ at: 'B', k: k[0]! })) : b.encKeys('A').then((k) => ({ at: 'A', k: k[0]! })))),
    );
    expect(new Set(made.map((m) => m.k.key_ID)).size).toBe(1000);
    const aAtB = made.filter((m) => m.at === 'B').map((m) => m.k);
    const bAtA = made.filter((m) => m.at === 'A').map((m) => m.k);
    const retrieverB = cluster.client('B', cluster.saeCerts.b2!, 16);
    const retrieverA = cluster.client('A', cluster.saeCerts.a2!, 16);
    // Each key asked for twice at once: exactly one request gets it.
    const attempts = await Promise.all(
      [...aAtB.map((k) => ['B', k] as const), ...bAtA.map((k) => ['A', k] as const)].flatMap(([site, k]) =>
        [0, 1].map(() =>
          (site === 'B' ? retrieverB.decKeys('A', [k.key_ID]) : retrieverA.decKeys('B', [k.key_ID])).then(
            (got) => ({ k, got: got[0]! }),
            (e: EtsiClientError) => ({ k, status: e.status }),
          ),
        ),
      ),
    );
    const wins = attempts.filter((x): x is { k: (typeof made)[0]['k']; got: (typeof made)[0]['k'] } => 'got' in x);
    expect(wins).toHaveLength(1000);
    for (const w of wins) expect(w.got).toEqual(w.k);
    expect(new Set(wins.map((w) => w.k.key_ID)).size).toBe(1000);
    expect(attempts.filter((x) => 'status' in x).every((x) => (x as { status: number }).status === 400)).toBe(true);
  });

  // Both directions, so the retrieving site runs on each engine under test (A) and on SQLite (B).
  it.each([
    { origin: 'A', maker: 'a1', peer: 'B', taker: 'b1' },
    { origin: 'B', maker: 'b1', peer: 'A', taker: 'a2' },
  ])('concurrent dec_keys with overlapping key IDs at $peer: each key goes to one request; a request that loses one gets none', async ({ origin, maker, peer, taker }) => {
    const made = await cluster.sae(origin, maker).encKeys(peer, { number: 30 });
    const byId = new Map(made.map((k) => [k.key_ID, k]));
    const b = cluster.client(peer, cluster.saeCerts[taker]!, 16);
    // Requests [k0,k1], [k1,k2], …, [k28,k29] all at once (they share group commits at B),
    // plus one request naming an unknown key in the same burst.
    const pairs = made.slice(0, -1).map((k, i) => [k.key_ID, made[i + 1]!.key_ID]);
    const unknown = b.decKeys(origin, ['0b7f0a55-5c28-4a36-8a8d-5a2a2f5f5e02']).then(
      () => 200,
      (e: EtsiClientError) => e.status,
    );
    const outcomes = await Promise.all(
      pairs.map((ids) =>
        b.decKeys(origin, ids).then(
          (got) => ({ ids, got }),
          (e: EtsiClientError) => ({ ids, status: e.status }),
        ),
      ),
    );
    expect(await unknown).toBe(400);
    const won = outcomes.filter((o): o is { ids: string[]; got: typeof made } => 'got' in o);
    const lost = outcomes.filter((o) => 'status' in o);
    expect(won.length).toBeGreaterThan(0);
    for (const o of lost) expect((o as { status: number }).status).toBe(400);
    const taken = won.flatMap((o) => o.got);
    for (const k of taken) expect(k).toEqual(byId.get(k.key_ID));
    expect(new Set(taken.map((k) => k.key_ID)).size).toBe(taken.length); // no key twice
    // The losers consumed nothing: every key not won is still there, exactly once.
    const rest = made.filter((k) => !taken.some((t) => t.key_ID === k.key_ID));
    for (const k of rest) expect(await b.decKeys(origin, [k.key_ID])).toEqual([k]);
    for (const k of made) await expectEtsiError(b.decKeys(origin, [k.key_ID]), 400);
  });

  it('two instances of site A on one database serve the same keys', async () => {
    const cfg = cluster.config('A', { B: {}, C: { pskFile }, D: {} }, { saes: { b1: 'B', b2: 'B', c1: 'C' }, listen: { host: '127.0.0.1', port: 0 } });
    const second = await KmeSite.create(cfg, { seedSource: systemSeedSource(), db: await engine.open() });
    const url = await second.start();
    const client = new EtsiClient({ url, cert: cluster.saeCerts.a1!.certPem, key: cluster.saeCerts.a1!.keyPem, ca: cluster.ca.certPem });
    try {
      // B's key for A, stored through the first instance, retrieved through the second.
      const [k] = await cluster.sae('B', 'b1').encKeys('A');
      expect(await client.decKeys('B', [k!.key_ID])).toEqual([k]);
      const [k2] = await client.encKeys('B');
      expect(await cluster.sae('B', 'b1').decKeys('A', [k2!.key_ID])).toEqual([k2]);
    } finally {
      await client.close();
      await second.stop();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + scaled(timeoutMs);
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('kme keys at rest', () => {
  it('are sealed with the site key: the database file never holds key bytes', async () => {
    const cluster = new Cluster();
    try {
      await cluster.setup(['A', 'B'], { a1: 'A', b1: 'B' });
      await cluster.start('A', cluster.config('A', { B: {} }));
      await cluster.start('B', cluster.config('B', { A: {} }));
      const keys = await cluster.sae('A', 'a1').encKeys('B', { number: 8 });
      for (const site of ['A', 'B']) {
        const dbFile = path.join(cluster.dir, `site-${site}.db`);
        const bytes = Buffer.concat([fs.readFileSync(dbFile), fs.existsSync(`${dbFile}-wal`) ? fs.readFileSync(`${dbFile}-wal`) : Buffer.alloc(0)]);
        for (const k of keys) {
          expect(bytes.includes(Buffer.from(k.key, 'base64'))).toBe(false);
          expect(bytes.includes(Buffer.from(k.key_ID))).toBe(true);
        }
        expect(fs.statSync(path.join(cluster.dir, `site-${site}.key`)).mode & 0o777).toBe(0o600);
      }
    } finally {
      await cluster.teardown();
    }
  });
});

describe('kme certificate reload (SIGHUP)', () => {
  it('moves a running two-site cluster to a new CA, site by site, without restarting a site', async () => {
    const cluster = new Cluster();
    const clients: EtsiClient[] = [];
    const etsi = (site: string, cert: Pem, ca: string): EtsiClient => {
      const c = new EtsiClient({ url: cluster.url(site), cert: cert.certPem, key: cert.keyPem, ca, connections: 1 });
      clients.push(c);
      return c;
    };
    try {
      await cluster.setup(['A', 'B'], { a1: 'A', b1: 'B' });
      const siteA = await cluster.start('A', cluster.config('A', { B: {} }));
      const siteB = await cluster.start('B', cluster.config('B', { A: {} }));
      const ca1 = cluster.ca.certPem;
      // A key made before the change, over connections opened with the old certificates.
      const [before] = await cluster.sae('A', 'a1').encKeys('B');
      const reloadBoth = () => Promise.all([siteA.reloadTls(), siteB.reloadTls()]);

      // 1. Both sites trust the old and the new CA. 2. Both get certificates of the new CA.
      // 3. Both trust only the new CA.
      const ca2 = await createCertificateAuthority();
      cluster.file('ca.crt', ca1 + ca2.certPem, 0o644);
      await reloadBoth();
      for (const id of ['A', 'B']) {
        const renewed = await issueKmeCertificate(ca2, { kmeId: id, hosts: ['127.0.0.1'] });
        cluster.file(`kme-${id}.crt`, renewed.certPem, 0o644);
        cluster.file(`kme-${id}.key`, renewed.keyPem);
      }
      await reloadBoth();
      cluster.file('ca.crt', ca2.certPem, 0o644);
      await reloadBoth();

      // B restarted drops every connection A had open to it, so the call below is made on a
      // new connection: B (trusting only the new CA) accepts it only if A presents its new
      // certificate, and A accepts B only if A trusts the new CA.
      await cluster.stop('B');
      await cluster.start('B', cluster.config('B', { A: {} }));

      const a1 = etsi('A', await issueSaeCertificate(ca2, { saeId: 'a1', site: 'A' }), ca2.certPem);
      const b1 = etsi('B', await issueSaeCertificate(ca2, { saeId: 'b1', site: 'B' }), ca2.certPem);
      const [after] = await a1.encKeys('B');
      expect(await b1.decKeys('A', [after!.key_ID, before!.key_ID])).toEqual([after, before]);
      // The old CA's SAE certificate is now refused at the handshake.
      const stale = etsi('A', cluster.saeCerts.a1!, ca2.certPem);
      await expect(stale.status('B')).rejects.toThrow();
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await cluster.teardown();
    }
  });

  it('the daemon role reloads on SIGHUP and logs a rejected set without stopping', async () => {
    const cluster = new Cluster();
    const chunks: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => chunks.push(line) });
    const messages = () => chunks.join('').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { msg: string }).msg);
    try {
      await cluster.setup(['A', 'B'], { a1: 'A', b1: 'B' });
      await cluster.start('B', cluster.config('B', { A: {} }));
      const role = new KmeRole(cluster.config('A', { B: {} }), { logger, stateDir: cluster.dir });
      await role.start();
      try {
        cluster.file('kme-A.key', cluster.kmeCerts.B!.keyPem);
        await role.reload();
        expect(messages()).toContain('kme: reload failed; the site keeps its current certificates');
        const renewed = await issueKmeCertificate(cluster.ca, { kmeId: 'A', hosts: ['127.0.0.1'] });
        cluster.file('kme-A.crt', renewed.certPem, 0o644);
        cluster.file('kme-A.key', renewed.keyPem);
        await role.reload();
        expect(messages()).toContain('kme: TLS certificate, key and CA reloaded');
        const [k] = await cluster.sae('A', 'a1').encKeys('B');
        expect(await cluster.sae('B', 'b1').decKeys('A', [k!.key_ID])).toEqual([k]);
        // New connections get the renewed certificate.
        const served = await new Promise<string>((resolve, reject) => {
          const socket = tlsConnect({ host: '127.0.0.1', port: cluster.ports.A!, ca: cluster.ca.certPem, cert: cluster.saeCerts.a1!.certPem, key: cluster.saeCerts.a1!.keyPem }, () => {
            resolve(socket.getPeerX509Certificate()!.serialNumber);
            socket.end();
          });
          socket.on('error', reject);
        });
        expect(served).toBe(new X509Certificate(renewed.certPem).serialNumber);
      } finally {
        await role.stop();
      }
    } finally {
      await cluster.teardown();
    }
  });

  it('keeps the current certificates when the new files do not fit together', async () => {
    const cluster = new Cluster();
    try {
      await cluster.setup(['A', 'B'], { a1: 'A', b1: 'B' });
      const siteA = await cluster.start('A', cluster.config('A', { B: {} }));
      await cluster.start('B', cluster.config('B', { A: {} }));
      // A certificate with somebody else's key.
      cluster.file('kme-A.key', cluster.kmeCerts.B!.keyPem);
      await expect(siteA.reloadTls()).rejects.toThrow(/kme\.tls: the new certificate, key and CA are not usable together/);
      fs.rmSync(path.join(cluster.dir, 'ca.crt'));
      await expect(siteA.reloadTls()).rejects.toThrow(/kme\.tls\.ca: cannot read .*ca\.crt \(ENOENT\)/);
      // Still serving, with what it had.
      const [k] = await cluster.sae('A', 'a1').encKeys('B');
      expect(await cluster.sae('B', 'b1').decKeys('A', [k!.key_ID])).toEqual([k]);
    } finally {
      await cluster.teardown();
    }
  });
});
