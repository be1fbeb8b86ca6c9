// Post-quantum key distribution on live sites: real KMEs on 127.0.0.1 with real mutual TLS,
// real SQLite files and real inter-KME calls. Every supported runtime (Node 22.20+, 24, 26)
// has OpenSSL 3.5 with ML-KEM: the link and the SAE face negotiate X25519MLKEM768 and
// requirePostQuantum refuses classical clients at the handshake.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';

import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { parseKmeConfig, type KmeConfig } from '../src/config/sections/kme.js';
import { deriveKey } from '../src/kme/derive.js';
import { EtsiClient, EtsiClientError } from '../src/kme/etsi-client.js';
import type { Logger } from '../src/kme/logger.js';
import { systemSeedSource } from '../src/kme/seed-source.js';
import { SiteKey } from '../src/kme/site-key.js';
import { KmeSite } from '../src/kme/site.js';
import { keySecret, linkLabel, nextChainSecret, type RatchetState } from '../src/pqlink/index.js';
import { defaultGroups, hybridAvailable, negotiatedGroup } from '../src/pqtls/index.js';
import { openDatabase } from '../src/storage/db.js';
import { KmeTestPki } from './helpers/kme-pki.js';

/** What a default client and server negotiate on every supported runtime (Node 22.20+, 24, 26: OpenSSL 3.5). */
const EXPECTED_GROUP = 'X25519MLKEM768';

interface LogLine {
  level: string;
  obj: Record<string, unknown>;
  msg: string;
}

function captureLogger(lines: LogLine[]): Logger {
  const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, obj: obj as Record<string, unknown>, msg: msg ?? '' });
  return { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}

/** Certificates, files and running sites for one test file. */
class Sites extends KmeTestPki {
  running: Record<string, KmeSite> = {};
  logs: Record<string, LogLine[]> = {};
  private clients: Array<{ close(): Promise<unknown> }> = [];

  constructor() {
    super('qentropy-kme-pq-');
  }


  raw(id: string, peers: Record<string, Record<string, unknown>>, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const tlsExtra = (extra.tls as Record<string, unknown> | undefined) ?? {};
    return {
      id,
      listen: { host: '127.0.0.1', port: this.ports[id] },
      storage: `sqlite:${path.join(this.dir, `site-${id}.db`)}`,
      siteKeyFile: path.join(this.dir, `site-${id}.key`),
      seedSource: 'system',
      peers: Object.fromEntries(Object.entries(peers).map(([p, o]) => [p, { url: this.url(p), ...o }])),
      ...extra,
      tls: { cert: path.join(this.dir, `kme-${id}.crt`), key: path.join(this.dir, `kme-${id}.key`), ca: path.join(this.dir, 'ca.crt'), ...tlsExtra },
    };
  }

  config(id: string, peers: Record<string, Record<string, unknown>>, extra: Record<string, unknown> = {}): KmeConfig {
    return parseKmeConfig(this.raw(id, peers, extra));
  }

  /** Creates the site, lets `prepare` add hooks, then starts it. */
  async start(id: string, config: KmeConfig, prepare?: (site: KmeSite) => void): Promise<KmeSite> {
    this.logs[id] ??= [];
    const site = await KmeSite.create(config, { seedSource: systemSeedSource(), logger: captureLogger(this.logs[id]!) });
    prepare?.(site);
    await site.start();
    this.running[id] = site;
    return site;
  }

  async stop(id: string): Promise<void> {
    await this.running[id]?.stop();
    delete this.running[id];
  }

  etsi(site: string, sae: string): EtsiClient {
    const c = new EtsiClient({ url: this.url(site), cert: this.saeCerts[sae]!.certPem, key: this.saeCerts[sae]!.keyPem, ca: this.ca.certPem });
    this.clients.push(c);
    return c;
  }

  /** GET with an SAE certificate and optional client groups; the body, or the error when there was no HTTP answer. */
  async get(site: string, sae: string, urlPath: string, ecdhCurve?: string): Promise<{ status: number; body: unknown }> {
    const agent = new Agent({ connect: { cert: this.saeCerts[sae]!.certPem, key: this.saeCerts[sae]!.keyPem, ca: this.ca.certPem, ...(ecdhCurve ? { ecdhCurve } : {}) } });
    try {
      const res = await request(`${this.url(site)}${urlPath}`, { dispatcher: agent, signal: AbortSignal.timeout(5000) });
      const text = await res.body.text();
      return { status: res.statusCode, body: res.headers['content-type']?.toString().includes('json') ? JSON.parse(text) : text };
    } finally {
      await agent.close();
    }
  }

  async teardown(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close()));
    for (const id of Object.keys(this.running)) await this.stop(id);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The value of one Prometheus sample in a /metrics text, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf('}'));
    if (want.every((w) => inside.split(',').includes(w))) return Number(line.slice(line.indexOf('}') + 1));
  }
  return 0;
}

/** The group a TLS client that offers `ecdhCurve` (default: the runtime's) negotiates with a site. */
function clientGroup(sites: Sites, site: string, sae: string, ecdhCurve?: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port: sites.ports[site]!, cert: sites.saeCerts[sae]!.certPem, key: sites.saeCerts[sae]!.keyPem, ca: sites.ca.certPem, ...(ecdhCurve ? { ecdhCurve } : {}) }, () => {
      // negotiatedGroup: Node 22 names no hybrid group itself (src/pqtls/negotiated.ts).
      const group = negotiatedGroup(s, ecdhCurve ?? defaultGroups());
      s.end();
      resolve(group);
    });
    s.on('error', reject);
  });
}

describe('hybrid TLS on the KME faces', () => {
  const sites = new Sites();
  beforeAll(async () => {
    await sites.setup(['A', 'B'], { a1: 'A', b1: 'B' });
    await sites.start('A', sites.config('A', { B: {} }));
    await sites.start('B', sites.config('B', { A: {} }));
  });
  afterAll(() => sites.teardown());

  it(`two sites negotiate ${EXPECTED_GROUP} on the link (both directions) and on the SAE face, and report it`, async () => {
    const before = (await sites.get('A', 'a1', '/metrics')).body as string;
    const [k1] = await sites.etsi('A', 'a1').encKeys('B');
    const [k2] = await sites.etsi('B', 'b1').encKeys('A');
    expect(await sites.etsi('B', 'b1').decKeys('A', [k1!.key_ID])).toEqual([k1]);
    expect(await sites.etsi('A', 'a1').decKeys('B', [k2!.key_ID])).toEqual([k2]);

    // The SAE face, seen from a plain Node TLS client with the runtime's default groups.
    expect(await clientGroup(sites, 'A', 'a1')).toBe(EXPECTED_GROUP);

    const health = await sites.get('A', 'a1', '/healthz');
    expect(health.status).toBe(200);
    const link = (health.body as { links: Record<string, { tls: Record<string, { group: string }>; ratchet: { epoch: number } }> }).links.B!;
    expect(link.tls.outbound!.group).toBe(EXPECTED_GROUP);
    expect(link.tls.inbound!.group).toBe(EXPECTED_GROUP);
    expect(link.ratchet.epoch).toBeGreaterThanOrEqual(1);

    const status = await sites.etsi('A', 'a1').status('B');
    expect((status as unknown as { status_extension: { tls: { outbound: { group: string } } } }).status_extension.tls.outbound.group).toBe(EXPECTED_GROUP);

    const after = (await sites.get('A', 'a1', '/metrics')).body as string;
    for (const face of ['kme-sae', 'kme-link-server', 'kme-link-client']) {
      expect(sample(after, 'qentropy_tls_handshakes_total', { face, group: EXPECTED_GROUP }), face).toBeGreaterThan(sample(before, 'qentropy_tls_handshakes_total', { face, group: EXPECTED_GROUP }));
    }
    // One debug line per connection names the face and the group.
    expect(sites.logs.A!.some((l) => l.level === 'debug' && l.msg === 'tls: handshake' && l.obj.group === EXPECTED_GROUP && l.obj.face === 'kme-sae')).toBe(true);
  });

  it('curl, an older client, keeps working on a face without requirePostQuantum', async () => {
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
      execFile('curl', ['-sS', '--fail-with-body', '--cert', path.join(sites.dir, 'sae-a1.crt'), '--key', path.join(sites.dir, 'sae-a1.key'), '--cacert', path.join(sites.dir, 'ca.crt'), `${sites.url('A')}/api/v1/keys/B/status`], (err, out) => (err ? reject(err) : resolve({ stdout: out }))),
    );
    expect(JSON.parse(stdout)).toMatchObject({ source_KME_ID: 'A', target_KME_ID: 'B' });
  });
});

describe('kme.requirePostQuantum', () => {
  const sites = new Sites();
  beforeAll(() => sites.setup(['P', 'Q'], { p1: 'P' }));
  afterAll(() => sites.teardown());

  it('the runtime offers the hybrid group (every supported Node line has OpenSSL 3.5)', () => {
    expect(hybridAvailable(), `Node ${process.version} with OpenSSL ${process.versions.openssl}`).toBe(true);
  });

  it('refuses an SAE client that offers only X25519 at the handshake (Node client and openssl s_client), with a log line and a metric; a hybrid client gets in', async () => {
    await sites.start('P', sites.config('P', { Q: { requirePostQuantum: false } }, { requirePostQuantum: true }));
    const metricsBefore = (await sites.get('P', 'p1', '/metrics')).body as string;
    const refused = await sites.get('P', 'p1', '/healthz', 'X25519').then(() => null, (e: Error) => e);
    expect(refused).toBeInstanceOf(Error);
    const s = await new Promise<string>((resolve) => {
      const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${sites.ports.P}`, '-groups', 'X25519', '-tls1_3', '-quiet',
        '-cert', path.join(sites.dir, 'sae-p1.crt'), '-key', path.join(sites.dir, 'sae-p1.key'), '-CAfile', path.join(sites.dir, 'ca.crt')], { timeout: 5000 }, (_err, out, errOut) => resolve(`${out}\n${errOut}`));
      child.stdin!.end('GET /healthz HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n');
    });
    expect(s).not.toMatch(/HTTP\/1\.1 200/);
    const ok = await sites.get('P', 'p1', '/healthz');
    expect(ok.status).toBe(200);
    const metricsAfter = ok.status === 200 ? ((await sites.get('P', 'p1', '/metrics')).body as string) : '';
    expect(sample(metricsAfter, 'qentropy_tls_refused_total', { face: 'kme-sae' }) - sample(metricsBefore, 'qentropy_tls_refused_total', { face: 'kme-sae' })).toBe(2);
    // Refused during the handshake (the listener offers only hybrid groups): no group was negotiated, the log says what it accepts.
    expect(sites.logs.P!.filter((l) => l.level === 'warn' && /requirePostQuantum/.test(l.msg) && l.obj.accepted === 'X25519MLKEM768')).toHaveLength(2);
  });

  it('a link that requires it refuses a peer that negotiates a classical group: 503 to the SAE, a log line, a metric', async () => {
    await sites.stop('P');
    await sites.start('Q', sites.config('Q', { P: {} }, { tls: { groups: 'X25519:P-256' } }));
    await sites.start('P', sites.config('P', { Q: { requirePostQuantum: true } }));
    const e = await sites.etsi('P', 'p1').encKeys('Q').then(() => null, (err: unknown) => err);
    expect(e).toBeInstanceOf(EtsiClientError);
    expect((e as EtsiClientError).status).toBe(503);
    expect(sites.logs.P!.some((l) => l.level === 'warn' && /requirePostQuantum/.test(l.msg) && l.obj.face === 'kme-link-client' && l.obj.peer === 'Q')).toBe(true);
    const metrics = (await sites.get('P', 'p1', '/metrics')).body as string;
    expect(sample(metrics, 'qentropy_tls_refused_total', { face: 'kme-link-client' })).toBeGreaterThan(0);
    await sites.stop('P');
    await sites.stop('Q');
  });
});

/** Reads a site's ratchet state for one link, unsealed with its site key (what an attacker holding the site would see). */
async function unsealedState(sites: Sites, site: string, peer: string): Promise<RatchetState> {
  const db = await openDatabase({ url: `sqlite:${path.join(sites.dir, `site-${site}.db`)}` });
  try {
    const [row] = await db.query<{ sealed: Buffer }>('SELECT sealed FROM pqlink_state WHERE site = $1 AND peer = $2', [site, peer]);
    const key = await SiteKey.load(path.join(sites.dir, `site-${site}.key`));
    return JSON.parse(key.open(Buffer.from(row!.sealed), Buffer.from(`qentropy pqlink state v1\n${site}\n${peer}`)).toString('utf8')) as RatchetState;
  } finally {
    await db.close();
  }
}

async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the inter-site ML-KEM-768 ratchet', () => {
  const sites = new Sites();
  let psk: Buffer;
  let pskFile: string;
  beforeAll(async () => {
    await sites.setup(['A', 'B'], { a1: 'A', b1: 'B' });
    psk = randomBytes(32);
    pskFile = sites.file('psk', psk);
  });
  afterEach(async () => {
    await sites.stop('A');
    await sites.stop('B');
  });
  afterAll(() => sites.teardown());

  const epochOf = async (site: string, peer: string): Promise<number> =>
    ((await sites.get(site, site === 'A' ? 'a1' : 'b1', '/healthz')).body as { links: Record<string, { ratchet: { epoch: number } }> }).links[peer]!.ratchet.epoch;

  it('keys of an erased epoch cannot be re-derived from everything recorded on the link plus the PSK and today\'s chain secret', async () => {
    // Everything that crosses the link, in the clear: as if its TLS were broken.
    const recorded: Array<{ url: string; body: unknown; reply: string }> = [];
    const record = (site: KmeSite): void => {
      site.app.addHook('onSend', async (request, _reply, payload) => {
        if (request.url.startsWith('/internal/')) recorded.push({ url: request.url, body: request.body, reply: String(payload) });
        return payload;
      });
    };
    const opts = { ratchet: { epochKeys: 2 }, peerTimeoutMs: 200, maintenanceSeconds: 1 };
    await sites.start('A', sites.config('A', { B: { pskFile } }, opts), record);
    await sites.start('B', sites.config('B', { A: { pskFile } }, opts), record);

    const [target] = await sites.etsi('A', 'a1').encKeys('B');
    const epoch = await epochOf('A', 'B');
    const chainThen = Buffer.from((await unsealedState(sites, 'A', 'B')).current!.secret, 'hex');
    expect(await sites.etsi('B', 'b1').decKeys('A', [target!.key_ID])).toEqual([target]);

    // More keys move the link on; after the grace period the old epoch is erased at both sites.
    await sites.etsi('A', 'a1').encKeys('B', { number: 2 });
    await until('a new epoch', async () => (await epochOf('A', 'B')) > epoch);
    await sites.etsi('B', 'b1').encKeys('A');
    for (const s of ['A', 'B']) {
      await until(`epoch ${epoch} erased at ${s}`, async () => {
        const st = await unsealedState(sites, s, s === 'A' ? 'B' : 'A');
        return ![st.current, st.previous, st.candidate].some((e) => e?.epoch === epoch);
      });
    }

    // The attacker: every recorded message, the PSK, and both sites' state today (site keys, databases).
    const delivery = recorded.flatMap((r) => (r.url === '/internal/v1/keys/deliver' ? ((r.body as { keys: Array<Record<string, unknown>> }).keys) : [])).find((k) => k.key_ID === target!.key_ID)!;
    expect(delivery.epoch).toBe(epoch);
    const seed = Buffer.from(delivery.seed as string, 'base64');
    const meta = { keyId: target!.key_ID, size: 256, origin: 'A', peer: 'B' };
    const key = Buffer.from(target!.key, 'base64');
    // The harness finds the key when it has the secret that was erased ...
    expect(deriveKey(seed, keySecret(chainThen, epoch, linkLabel('A', 'B')), meta)).toEqual(key);
    // ... and not from anything that is left.
    const today = [await unsealedState(sites, 'A', 'B'), await unsealedState(sites, 'B', 'A')].flatMap((st) => [st.current, st.previous, st.candidate].filter((e) => e !== undefined).map((e) => ({ epoch: e!.epoch, chain: Buffer.from(e!.secret, 'hex') })));
    expect(today.length).toBeGreaterThan(0);
    const exchanges = recorded.filter((r) => r.url === '/internal/v1/pqlink/offer').map((r) => ({ ek: Buffer.from((r.body as { ek: string }).ek, 'base64'), ct: Buffer.from((JSON.parse(r.reply) as { ciphertext: string }).ciphertext, 'base64') }));
    expect(exchanges.length).toBeGreaterThanOrEqual(2);
    const link = linkLabel('A', 'B');
    const guesses: Array<Buffer | undefined> = [undefined, psk];
    for (const t of today) guesses.push(t.chain, keySecret(t.chain, epoch, link), keySecret(t.chain, t.epoch, link));
    for (const { ek, ct } of exchanges) {
      for (const ss of [createHash('sha256').update(ct).digest(), createHash('sha256').update(ek).digest(), ct.subarray(0, 32), ek.subarray(0, 32), createHash('sha256').update(Buffer.concat([ek, ct])).digest()]) {
        for (const prev of [undefined, ...today.map((t) => t.chain)]) guesses.push(keySecret(nextChainSecret(prev, ss, psk, epoch, link), epoch, link));
      }
    }
    for (const guess of guesses) expect(deriveKey(seed, guess, meta).equals(key)).toBe(false);
    // The erased chain secret is nowhere: not in either database file, not on the link.
    for (const s of ['A', 'B']) expect(fs.readFileSync(path.join(sites.dir, `site-${s}.db`)).includes(chainThen)).toBe(false);
    expect(JSON.stringify(recorded).includes(chainThen.toString('hex'))).toBe(false);
    expect(JSON.stringify(recorded).includes(chainThen.toString('base64'))).toBe(false);
  });

  it('a restart in the middle of an epoch keeps delivering matching keys, and the returning site re-keys', async () => {
    const cfgA = sites.config('A', { B: { pskFile } });
    const cfgB = sites.config('B', { A: { pskFile } });
    await sites.start('A', cfgA);
    await sites.start('B', cfgB);
    const [before] = await sites.etsi('A', 'a1').encKeys('B');
    const epoch = await epochOf('A', 'B');
    await sites.stop('B');
    await sites.start('B', cfgB);
    // Keys made before the restart are still there, and new keys match in both directions.
    expect(await sites.etsi('B', 'b1').decKeys('A', [before!.key_ID])).toEqual([before]);
    const [ab] = await sites.etsi('A', 'a1').encKeys('B');
    const [ba] = await sites.etsi('B', 'b1').encKeys('A');
    expect(await sites.etsi('B', 'b1').decKeys('A', [ab!.key_ID])).toEqual([ab]);
    expect(await sites.etsi('A', 'a1').decKeys('B', [ba!.key_ID])).toEqual([ba]);
    await until('a re-key after the restart', async () => (await epochOf('B', 'A')) > epoch && (await epochOf('A', 'B')) === (await epochOf('B', 'A')));
    expect(sites.logs.A!.some((l) => l.msg === 'pqlink: new ratchet epoch')).toBe(true);
  });

  it('an instance whose epoch another instance of the site retired gets one 503, then follows at once', async () => {
    // Maintenance (which would also follow) once an hour, so only the refusal makes A follow.
    const cfgA = sites.config('A', { B: { pskFile } }, { maintenanceSeconds: 3600 });
    await sites.start('A', cfgA);
    await sites.start('B', sites.config('B', { A: { pskFile } }));
    const [first] = await sites.etsi('A', 'a1').encKeys('B');
    expect(await sites.etsi('B', 'b1').decKeys('A', [first!.key_ID])).toEqual([first]);
    const epoch = await epochOf('B', 'A');
    // Two more instances of A on A's database, one after the other: each re-keys at start.
    for (let i = 1; i <= 2; i++) {
      const other = await KmeSite.create({ ...cfgA, listen: { host: '127.0.0.1', port: 0 } }, { seedSource: systemSeedSource(), logger: captureLogger([]) });
      await other.start();
      await until(`B at epoch ${epoch + i}`, async () => (await epochOf('B', 'A')) === epoch + i);
      await other.stop();
    }
    expect(await epochOf('A', 'B')).toBe(epoch);
    await expect(sites.etsi('A', 'a1').encKeys('B')).rejects.toMatchObject({ status: 503 });
    await until('A following the other instances', async () => (await epochOf('A', 'B')) === epoch + 2, 2000);
    const [next] = await sites.etsi('A', 'a1').encKeys('B');
    expect(await sites.etsi('B', 'b1').decKeys('A', [next!.key_ID])).toEqual([next]);
  });

  it('sites that disagree on the suite (the ratchet on at one only) refuse with 503 and a log line, never a wrong key', async () => {
    await sites.start('A', sites.config('A', { B: { pskFile } }));
    await sites.start('B', sites.config('B', { A: { pskFile, ratchet: false } }));
    const storedAtB = (await sites.etsi('B', 'b1').status('A')).stored_key_count;
    const fromB = await sites.etsi('B', 'b1').encKeys('A').then(() => null, (e: unknown) => e);
    expect((fromB as EtsiClientError).status).toBe(503);
    expect(sites.logs.A!.some((l) => l.level === 'warn' && /suite differs/.test(l.msg))).toBe(true);
    const fromA = await sites.etsi('A', 'a1').encKeys('B').then(() => null, (e: unknown) => e);
    expect((fromA as EtsiClientError).status).toBe(503);
    expect((await sites.etsi('B', 'b1').status('A')).stored_key_count).toBe(storedAtB);
  });
});


describe('multicast over ratcheted links', () => {
  const sites = new Sites();
  let pskAB: string;
  let pskAC: string;
  beforeAll(async () => {
    await sites.setup(['A', 'B', 'C'], { a1: 'A', b1: 'B', c1: 'C' });
    pskAB = sites.file('psk-ab', randomBytes(32));
    pskAC = sites.file('psk-ac', randomBytes(32));
  });
  afterEach(async () => {
    for (const s of ['A', 'B', 'C']) await sites.stop(s);
  });
  afterAll(() => sites.teardown());

  const epochOf = async (site: string, peer: string): Promise<number> =>
    ((await sites.get(site, 'a1', '/healthz')).body as { links: Record<string, { ratchet: { epoch: number } }> }).links[peer]!.ratchet.epoch;
  /** Keeps every delivery a site receives, as it crossed the link. */
  const recordDeliveries = (into: Array<Record<string, unknown>>) => (site: KmeSite): void => {
    site.app.addHook('preHandler', async (request) => {
      if (request.url === '/internal/v1/keys/deliver') into.push(...(request.body as { keys: Array<Record<string, unknown>> }).keys);
    });
  };
  const startC = (atC: Array<Record<string, unknown>>, ratchet = true): Promise<KmeSite> =>
    sites.start('C', sites.config('C', { A: { pskFile: pskAC, ratchet } }), recordDeliveries(atC));
  const startAll = async (atB: Array<Record<string, unknown>>, atC: Array<Record<string, unknown>>): Promise<void> => {
    // A small epochKeys at A moves the A–B link to later epochs than the A–C link.
    await sites.start('A', sites.config('A', { B: { pskFile: pskAB }, C: { pskFile: pskAC } }, { saes: { b1: 'B', c1: 'C' }, ratchet: { epochKeys: 2 } }));
    await sites.start('B', sites.config('B', { A: { pskFile: pskAB } }), recordDeliveries(atB));
    await startC(atC);
  };

  it('each site derives its part from its own link\'s current epoch: the same key at B and (wrapped) at C', async () => {
    const atB: Array<Record<string, unknown>> = [];
    const atC: Array<Record<string, unknown>> = [];
    await startAll(atB, atC);
    await sites.etsi('A', 'a1').encKeys('C');
    for (let i = 0; i < 3; i++) await sites.etsi('A', 'a1').encKeys('B', { number: 2 });
    await until('the A–B link ahead of the A–C link', async () => (await epochOf('A', 'B')) > (await epochOf('A', 'C')));

    const keys = await sites.etsi('A', 'a1').encKeys('b1', { number: 2, additionalSlaveSaeIds: ['c1'] });
    const ids = keys.map((k) => k.key_ID);
    expect(await sites.etsi('B', 'b1').decKeys('A', ids)).toEqual(keys);
    expect(await sites.etsi('C', 'c1').decKeys('A', ids)).toEqual(keys);

    const toB = atB.filter((k) => ids.includes(k.key_ID as string));
    const toC = atC.filter((k) => ids.includes(k.key_ID as string));
    expect(toB).toHaveLength(2);
    expect(toC).toHaveLength(2);
    const linkB = (await sites.get('B', 'b1', '/healthz')).body as { links: Record<string, { ratchet: { suite: string } }> };
    const linkC = (await sites.get('C', 'c1', '/healthz')).body as { links: Record<string, { ratchet: { suite: string } }> };
    for (const k of toB) expect([k.suite, k.wrap]).toEqual([linkB.links.A!.ratchet.suite, undefined]);
    for (const k of toC) expect(k.suite).toBe(`${linkC.links.A!.ratchet.suite}+wrap`);
    // Two links, two epochs: C's part was not derived with the A–B link's secret.
    expect(toC[0]!.epoch).not.toBe(toB[0]!.epoch);
  });

  it('a further site whose link is on another suite refuses: 503 to the SAE, and the slave\'s site is told to cancel', async () => {
    const atB: Array<Record<string, unknown>> = [];
    const atC: Array<Record<string, unknown>> = [];
    await startAll(atB, atC);
    // A's ratchet with C is established; then C comes back with the ratchet off on that link.
    await sites.etsi('A', 'a1').encKeys('C');
    await sites.stop('C');
    await startC(atC, false);
    const heldAtB = async () => ((await sites.etsi('B', 'b1').status('A')).status_extension as { link_keys_held: number }).link_keys_held;
    const before = await heldAtB();
    const e = await sites.etsi('A', 'a1').encKeys('b1', { number: 2, additionalSlaveSaeIds: ['c1'] }).then(() => null, (err: unknown) => err);
    expect((e as EtsiClientError).status).toBe(503);
    expect(JSON.stringify((e as EtsiClientError).body)).toMatch(/C/);
    // B stored the keys in phase 2 and gets the cancel: they end up at no site.
    expect(atB.length).toBe(2);
    await until('the keys cancelled at B', async () => (await heldAtB()) === before);
    await expect(sites.etsi('B', 'b1').decKeys('A', atB.map((k) => k.key_ID as string))).rejects.toMatchObject({ status: 400 });
    // The link to B alone still works.
    const [k] = await sites.etsi('A', 'a1').encKeys('b1');
    expect(await sites.etsi('B', 'b1').decKeys('A', [k!.key_ID])).toEqual([k]);
  });
});
