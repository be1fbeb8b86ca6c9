// One site's KME, independent of HTTP: the ETSI operations for SAEs (status, enc_keys,
// dec_keys) and the inter-KME operations for peers (deliver, cancel, retrieved), with the
// authorisation rules of docs/kme.md. The HTTP layer only identifies the caller from its
// certificate and turns EtsiErrors into responses.
import { randomUUID } from 'node:crypto';

import type { CertIdentity } from '../pki/identity.js';
import { isValidId } from '../pki/identity.js';
import { deriveKey, SEED_BYTES } from './derive.js';
import { badRequest, EtsiError, unauthorized, unavailable } from './errors.js';
import { GroupCommit } from './group-commit.js';
import { LinkSender, type WireKey } from './link.js';
import { asEtsiError, StaticLinkKeys, type LinkKeyContext, type LinkKeys } from './link-keys.js';
import { silentLogger, type Logger } from './logger.js';
import { NoticeSender } from './notices.js';
import { PeerClient, type PeerKeyExchange, type PeerTls } from './peer-client.js';
import { isKeyId, type EncKeysRequest, type Limits } from './requests.js';
import { SeedUnavailableError, type SeedSource } from './seed-source.js';
import type { SiteKey } from './site-key.js';
import { ACTIVE, ANY_SAE, KeyStore, type KeyRow } from './store.js';

export interface KmeServiceOptions extends Limits {
  id: string;
  peers: Record<string, { url: string; psk?: Buffer; keyExchange?: PeerKeyExchange }>;
  /** Per peer: how its keys are derived (default: StaticLinkKeys over its PSK). */
  linkKeys?: (peerId: string, peer: PeerClient) => LinkKeys | undefined;
  saes: Record<string, string>;
  maxKeyCount: number;
  keyTtlSeconds: number;
  peerTimeoutMs: number;
  tls: PeerTls;
  store: KeyStore;
  siteKey: SiteKey;
  seedSource: SeedSource;
  logger?: Logger;
  /** What `status` reports about a link in `status_extension` (TLS group, ratchet epoch). */
  linkStatus?: (peerId: string) => Record<string, unknown>;
}

export interface KeyItem {
  key_ID: string;
  key: string;
}

export interface KeyContainer {
  keys: KeyItem[];
}

export interface StatusReply {
  source_KME_ID: string;
  target_KME_ID: string;
  master_SAE_ID: string;
  slave_SAE_ID: string;
  key_size: number;
  stored_key_count: number;
  max_key_count: number;
  max_key_per_request: number;
  max_key_size: number;
  min_key_size: number;
  max_SAE_ID_count: number;
  /** The link's key exchange (TLS group, suite, ratchet epoch); ETSI's optional extension field. */
  status_extension?: Record<string, unknown>;
}

/** The other end of a request path `{id}`: a site, and the SAE when `{id}` named one. */
interface Target {
  site: string;
  sae?: string;
}

/** Store-full checks run on every enc_keys; a count per link cached for a second keeps them cheap. */
const COUNT_CACHE_MS = 1000;
const MAX_DELIVERY_KEYS = 20_000;

export class KmeService {
  readonly id: string;
  readonly store: KeyStore;
  readonly notices: NoticeSender;
  /** Every durable change goes through here: concurrent requests share one commit. */
  readonly writes: GroupCommit;
  private readonly log: Logger;
  private readonly peerClients = new Map<string, PeerClient>();
  private readonly senders = new Map<string, LinkSender>();
  readonly linkKeys = new Map<string, LinkKeys>();
  private readonly counts = new Map<string, { n: number; at: number }>();

  constructor(private readonly opts: KmeServiceOptions) {
    this.id = opts.id;
    this.store = opts.store;
    this.log = opts.logger ?? silentLogger;
    this.writes = new GroupCommit(this.store.db);
    this.notices = new NoticeSender(this.store, this.peerClients, opts.keyTtlSeconds * 1000, this.log);
    for (const [peerId, peer] of Object.entries(opts.peers)) {
      const client = new PeerClient(peerId, peer.url, opts.tls, opts.peerTimeoutMs, peer.keyExchange);
      this.peerClients.set(peerId, client);
      this.senders.set(peerId, new LinkSender(client, this.store, this.writes, this.notices, this.log));
      this.linkKeys.set(peerId, opts.linkKeys?.(peerId, client) ?? new StaticLinkKeys(peer.psk));
    }
  }

  get limits(): Limits {
    return this.opts;
  }

  // ---- identities -------------------------------------------------------------------

  /** The SAE behind a certificate, required to belong to this site. */
  private localSae(caller: CertIdentity): string {
    if (caller.role !== 'sae') throw unauthorized('this API is for SAEs; a KME certificate cannot use it');
    const site = caller.site ?? this.opts.saes[caller.id];
    if (site === undefined) throw unauthorized(`SAE '${caller.id}' is not registered with any site`);
    if (site !== this.id) throw unauthorized(`SAE '${caller.id}' belongs to site '${site}', not to '${this.id}'`);
    return caller.id;
  }

  private callerSite(caller: CertIdentity): string | undefined {
    return caller.site ?? this.opts.saes[caller.id];
  }

  /** Resolves `{id}` of a path: a peer KME ID, or an SAE ID registered to a peer site. */
  private resolveTarget(id: string): Target {
    if (!isValidId(id)) throw badRequest(`'${id}' is not a KME or SAE ID`, [{ id }]);
    if (this.peerClients.has(id)) return { site: id };
    const site = this.opts.saes[id];
    if (site !== undefined && this.peerClients.has(site)) return { site, sae: id };
    if (id === this.id || site === this.id) {
      throw badRequest(`'${id}' is this site; keys are shared with another site`, [{ id }]);
    }
    throw badRequest(`unknown peer '${id}': not a KME ID or registered SAE ID of a peer site`, [{ id }]);
  }

  // ---- status -----------------------------------------------------------------------

  async status(caller: CertIdentity, id: string): Promise<StatusReply> {
    const sae = this.localSae(caller);
    const target = this.resolveTarget(id);
    const stored = await this.store.countLink(this.id, target.site);
    this.counts.set(target.site, { n: stored, at: Date.now() });
    return {
      source_KME_ID: this.id,
      target_KME_ID: target.site,
      master_SAE_ID: sae,
      slave_SAE_ID: target.sae ?? id,
      key_size: this.opts.keySize,
      stored_key_count: stored,
      max_key_count: this.opts.maxKeyCount,
      max_key_per_request: this.opts.maxKeyPerRequest,
      max_key_size: this.opts.maxKeySize,
      min_key_size: this.opts.minKeySize,
      max_SAE_ID_count: this.opts.maxSaeIdCount,
      ...(this.opts.linkStatus ? { status_extension: this.opts.linkStatus(target.site) } : {}),
    };
  }

  // ---- capacity ---------------------------------------------------------------------

  private async reserve(link: string, n: number): Promise<void> {
    const now = Date.now();
    let entry = this.counts.get(link);
    if (!entry || now - entry.at > COUNT_CACHE_MS) {
      entry = { n: await this.store.countLink(this.id, link), at: now };
      this.counts.set(link, entry);
    }
    if (entry.n + n > this.opts.maxKeyCount) {
      throw unavailable(`the key store for the link ${this.id}-${link} is full`, [{ stored_key_count: entry.n, max_key_count: this.opts.maxKeyCount }]);
    }
    entry.n += n;
  }

  private release(link: string, n: number): void {
    const entry = this.counts.get(link);
    if (entry) entry.n = Math.max(0, entry.n - n);
  }

  // ---- enc_keys ---------------------------------------------------------------------

  async encKeys(caller: CertIdentity, id: string, req: EncKeysRequest): Promise<KeyContainer> {
    const owner = this.localSae(caller);
    const target = this.resolveTarget(id);
    for (const extra of req.additionalSlaveSaeIds) {
      const site = this.opts.saes[extra];
      if (site !== undefined && site !== target.site) {
        throw badRequest(`additional slave SAE '${extra}' belongs to site '${site}', not to '${target.site}'`, [{ additional_slave_SAE_ID: extra }]);
      }
    }
    const slaves = [...new Set([...(target.sae ? [target.sae] : []), ...req.additionalSlaveSaeIds])];

    await this.reserve(target.site, req.number);
    let seeds: Buffer;
    let link: LinkKeyContext;
    try {
      link = await this.linkKeys.get(target.site)!.forSending(req.number).catch((err: unknown) => {
        throw asEtsiError(err);
      });
      seeds = await this.opts.seedSource.take(SEED_BYTES * req.number);
    } catch (err) {
      this.release(target.site, req.number);
      if (err instanceof SeedUnavailableError) throw unavailable(`no entropy for new keys: ${err.message}`);
      throw err;
    }

    const created = Date.now();
    const expires = created + this.opts.keyTtlSeconds * 1000;
    const rows: KeyRow[] = [];
    const wire: WireKey[] = [];
    const keys: KeyItem[] = [];
    for (let i = 0; i < req.number; i++) {
      const keyId = randomUUID();
      const seed = seeds.subarray(i * SEED_BYTES, (i + 1) * SEED_BYTES);
      const meta = { keyId, size: req.size, origin: this.id, peer: target.site };
      const key = deriveKey(seed, link.secret, meta);
      const w: WireKey = {
        key_ID: keyId,
        size: req.size,
        seed: seed.toString('base64'),
        origin: this.id,
        peer: target.site,
        created,
        suite: link.suite,
        ...(link.epoch !== undefined ? { epoch: link.epoch } : {}),
        master_SAE_ID: owner,
        slave_SAE_IDs: slaves,
      };
      wire.push(w);
      rows.push({
        key_id: keyId,
        origin: this.id,
        peer: target.site,
        size: req.size,
        owner,
        waiting: '',
        state: 0,
        created,
        expires,
        digest: this.digest(w),
        key_enc: this.opts.siteKey.seal(key, this.aad(keyId, this.id, target.site)),
      });
      keys.push({ key_ID: keyId, key: key.toString('base64') });
      key.fill(0);
    }
    seeds.fill(0);

    try {
      await this.senders.get(target.site)!.submit(rows, wire);
    } catch (err) {
      this.release(target.site, req.number);
      throw err;
    }
    this.log.info({ op: 'enc_keys', sae: owner, peer: target.site, number: req.number, size: req.size }, 'kme: keys created');
    return { keys };
  }

  private aad(keyId: string, origin: string, peer: string): Buffer {
    return Buffer.from(`${keyId}\n${origin}\n${peer}`, 'utf8');
  }

  /** A keyed fingerprint of a delivery, to tell a harmless retry from a conflicting one. */
  private digest(w: WireKey): string {
    return this.opts.siteKey.mac(
      JSON.stringify([w.key_ID, w.size, w.seed, w.origin, w.peer, w.created, w.suite, w.master_SAE_ID, w.slave_SAE_IDs, ...(w.epoch !== undefined ? [w.epoch] : [])]),
    );
  }

  // ---- dec_keys ---------------------------------------------------------------------

  async decKeys(caller: CertIdentity, id: string, keyIds: string[]): Promise<KeyContainer> {
    const sae = this.localSae(caller);
    const target = this.resolveTarget(id);
    const now = Date.now();
    const origins = new Map<string, string[]>();

    const rows = await this.writes.run(async (tx) => {
      origins.clear();
      const found = await this.store.getKeys(tx, keyIds);
      const byId = new Map(found.filter((r) => r.state === ACTIVE && r.expires > now).map((r) => [r.key_id, r]));
      const missing = keyIds.filter((k) => !byId.has(k));
      if (missing.length > 0) {
        throw badRequest(`unknown key_ID${missing.length > 1 ? 's' : ''}`, missing.map((key_ID) => ({ key_ID, problem: 'unknown' })));
      }
      const refused: Array<Record<string, unknown>> = [];
      for (const keyId of keyIds) {
        const row = byId.get(keyId)!;
        const problem = this.mayRetrieve(row, sae, target);
        if (problem) refused.push({ key_ID: keyId, problem });
      }
      if (refused.length > 0) throw unauthorized('not authorised for the requested key', refused);

      for (const keyId of keyIds) {
        const row = byId.get(keyId)!;
        if (row.origin === this.id) continue; // the origin keeps its copy until the peer reports retrieval
        const remaining = row.waiting === ANY_SAE ? [] : row.waiting.split(',').filter((s) => s !== sae);
        const changed =
          remaining.length === 0
            ? await tx.execute('DELETE FROM kme_keys WHERE key_id = $1 AND waiting = $2', [keyId, row.waiting])
            : await tx.execute('UPDATE kme_keys SET waiting = $1 WHERE key_id = $2 AND waiting = $3', [remaining.join(','), keyId, row.waiting]);
        // Another request retrieved it first (exactly once): refuse the whole request.
        if (changed !== 1) throw badRequest('unknown key_ID', [{ key_ID: keyId, problem: 'already retrieved' }]);
        if (remaining.length === 0) {
          const list = origins.get(row.origin) ?? [];
          list.push(keyId);
          origins.set(row.origin, list);
        }
      }
      for (const [origin, ids] of origins) await this.notices.enqueue(tx, origin, 'retrieved', ids);
      return keyIds.map((k) => byId.get(k)!);
    });

    for (const [origin, ids] of origins) {
      this.release(origin, ids.length);
      this.notices.kick(origin);
    }
    this.log.info({ op: 'dec_keys', sae, peer: target.site, number: rows.length }, 'kme: keys retrieved');
    return {
      keys: rows.map((row) => {
        const key = this.opts.siteKey.open(row.key_enc, this.aad(row.key_id, row.origin, row.peer));
        const item = { key_ID: row.key_id, key: key.toString('base64') };
        key.fill(0);
        return item;
      }),
    };
  }

  /** Why `sae` (of this site) may not retrieve `row` through path `{id}` = target, or null. */
  private mayRetrieve(row: KeyRow, sae: string, target: Target): string | null {
    if (row.origin === this.id) {
      // At the origin: only the SAE that created it, naming the key's peer site (or one of its SAEs).
      if (row.owner !== sae) return 'only the SAE that created this key may retrieve it here';
      if (row.peer !== target.site) return `the key is not shared with '${target.sae ?? target.site}'`;
      return null;
    }
    if (row.peer === this.id) {
      // At the peer: the SAEs of this site the key was meant for, naming its origin (site or master SAE).
      if (row.origin !== target.site) return `the key was not made by '${target.sae ?? target.site}'`;
      if (target.sae !== undefined && target.sae !== row.owner) return `the key was not made by '${target.sae}'`;
      if (row.waiting !== ANY_SAE && !row.waiting.split(',').includes(sae)) return 'the key is not meant for this SAE';
      return null;
    }
    return 'the key does not belong to this site';
  }

  // ---- inter-KME --------------------------------------------------------------------

  private callerKme(caller: CertIdentity): string {
    if (caller.role !== 'kme') throw unauthorized('the inter-KME path needs a KME certificate');
    if (!this.peerClients.has(caller.id)) throw unauthorized(`KME '${caller.id}' is not a peer of '${this.id}'`);
    return caller.id;
  }

  private parseIdList(body: unknown): string[] {
    const list = (body as { key_IDs?: unknown } | null)?.key_IDs;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_DELIVERY_KEYS || !list.every(isKeyId)) {
      throw badRequest('key_IDs must be a non-empty array of key IDs');
    }
    return (list as string[]).map((s) => s.toLowerCase());
  }

  /** Peer side of phase 2: store the delivered keys (idempotent), then confirm. */
  async deliver(caller: CertIdentity, body: unknown): Promise<{ stored: number }> {
    const origin = this.callerKme(caller);
    const list = (body as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_DELIVERY_KEYS) {
      throw badRequest(`keys must be an array of 1 to ${MAX_DELIVERY_KEYS} key metadata records`);
    }
    const now = Date.now();
    const expires = now + this.opts.keyTtlSeconds * 1000;
    const wire = list.map((item) => this.checkWireKey(item, origin));
    if (new Set(wire.map((w) => w.key_ID)).size !== wire.length) throw badRequest('duplicate key_ID in the delivery');
    // One batch may straddle a ratchet epoch: resolve each (suite, epoch) once.
    const contexts = new Map<string, LinkKeyContext>();
    for (const w of wire) {
      const tag = `${w.suite}\n${String(w.epoch)}`;
      if (contexts.has(tag)) continue;
      const n = wire.filter((x) => x.suite === w.suite && x.epoch === w.epoch).length;
      contexts.set(tag, await this.linkKeys.get(origin)!.forReceiving(w.suite, w.epoch, n).catch((err: unknown) => {
        throw asEtsiError(err);
      }));
    }
    const rows: KeyRow[] = wire.map((w) => {
      const seed = Buffer.from(w.seed, 'base64');
      const link = contexts.get(`${w.suite}\n${String(w.epoch)}`)!;
      const key = deriveKey(seed, link.secret, { keyId: w.key_ID, size: w.size, origin: w.origin, peer: w.peer });
      seed.fill(0);
      const sealed = this.opts.siteKey.seal(key, this.aad(w.key_ID, w.origin, w.peer));
      key.fill(0);
      return {
        key_id: w.key_ID,
        origin: w.origin,
        peer: w.peer,
        size: w.size,
        owner: w.master_SAE_ID,
        waiting: w.slave_SAE_IDs.length > 0 ? w.slave_SAE_IDs.join(',') : ANY_SAE,
        state: ACTIVE,
        created: w.created,
        expires,
        digest: this.digest(w),
        key_enc: sealed,
      };
    });

    await this.reserve(origin, rows.length);
    try {
      await this.writes.run(async (tx) => {
        const cancelled = new Set(await this.store.tombstoned(tx, rows.map((r) => r.key_id)));
        // A delivery that arrives after the origin cancelled it is dropped: the origin told its SAE 503.
        const fresh = rows.filter((r) => !cancelled.has(r.key_id));
        const inserted = await this.store.insertKeys(tx, fresh);
        if (inserted < fresh.length) {
          const existing = await this.store.digests(tx, fresh.map((r) => r.key_id));
          const clash = fresh.filter((r) => existing.get(r.key_id) !== r.digest);
          if (clash.length > 0) {
            throw new EtsiError(409, 'key_ID already used for a different key', clash.map((r) => ({ key_ID: r.key_id })));
          }
        }
      });
    } catch (err) {
      this.release(origin, rows.length);
      throw err;
    }
    return { stored: rows.length };
  }

  private checkWireKey(item: unknown, origin: string): WireKey {
    const w = item as Partial<WireKey> | null;
    const bad = (why: string): EtsiError => badRequest(`invalid key metadata: ${why}`, [{ key_ID: String(w?.key_ID) }]);
    if (typeof w !== 'object' || w === null) throw bad('not an object');
    if (!isKeyId(w.key_ID)) throw bad('key_ID is not a UUID');
    if (w.origin !== origin) throw bad(`origin must be the calling KME '${origin}'`);
    if (w.peer !== this.id) throw bad(`peer must be this KME '${this.id}'`);
    if (typeof w.size !== 'number' || !Number.isInteger(w.size) || w.size % 8 !== 0 || w.size < this.opts.minKeySize || w.size > this.opts.maxKeySize) {
      throw bad('size out of range');
    }
    if (typeof w.seed !== 'string' || Buffer.from(w.seed, 'base64').length !== SEED_BYTES) throw bad('seed must be 256 bits, base64');
    if (typeof w.created !== 'number' || !Number.isFinite(w.created)) throw bad('created must be a time in ms');
    if (typeof w.suite !== 'string') throw bad('suite must be a string');
    if (w.epoch !== undefined && (typeof w.epoch !== 'number' || !Number.isSafeInteger(w.epoch) || w.epoch < 1)) throw bad('epoch must be a positive integer');
    if (typeof w.master_SAE_ID !== 'string' || !isValidId(w.master_SAE_ID)) throw bad('master_SAE_ID is not an SAE ID');
    if (!Array.isArray(w.slave_SAE_IDs) || !w.slave_SAE_IDs.every((s) => typeof s === 'string' && isValidId(s))) {
      throw bad('slave_SAE_IDs must be an array of SAE IDs');
    }
    return { ...(w as WireKey), key_ID: w.key_ID.toLowerCase() };
  }

  /** Peer side: the origin gave up on these deliveries; drop them and refuse late copies. */
  async cancel(caller: CertIdentity, body: unknown): Promise<{ cancelled: number }> {
    const origin = this.callerKme(caller);
    const ids = this.parseIdList(body);
    const tombstoneUntil = Date.now() + this.opts.keyTtlSeconds * 1000;
    const n = await this.writes.run(async (tx) => {
      await this.store.addTombstones(tx, ids, tombstoneUntil);
      return this.store.deleteKeys(tx, ids, ' AND origin = $1 AND peer = $2', [origin, this.id]);
    });
    this.release(origin, n);
    if (n > 0) this.log.info({ op: 'cancel', peer: origin, keys: n }, 'kme: cancelled deliveries removed');
    return { cancelled: n };
  }

  /** Origin side: the peer's SAEs have the keys; our SAE got them at enc_keys. Drop our copy. */
  async retrieved(caller: CertIdentity, body: unknown): Promise<{ removed: number }> {
    const peer = this.callerKme(caller);
    const ids = this.parseIdList(body);
    const n = await this.writes.run((tx) => this.store.deleteKeys(tx, ids, ' AND origin = $1 AND peer = $2', [this.id, peer]));
    this.release(peer, n);
    return { removed: n };
  }

  // ---- maintenance ------------------------------------------------------------------

  /** Expiry, abandoned pending keys (a crash mid-delivery), and notices still owed to peers. */
  async maintain(now = Date.now()): Promise<void> {
    const expired = await this.store.sweepExpired(now);
    if (expired > 0) {
      this.counts.clear();
      this.log.info({ op: 'expire', keys: expired }, 'kme: expired keys removed');
    }
    const stale = await this.store.stalePending(this.id, now - 2 * this.opts.peerTimeoutMs - 5000);
    if (stale.length > 0) {
      const byPeer = new Map<string, string[]>();
      for (const s of stale) byPeer.set(s.peer, [...(byPeer.get(s.peer) ?? []), s.key_id]);
      await this.store.db.transaction(async (tx) => {
        for (const [peer, ids] of byPeer) {
          await this.store.deleteKeys(tx, ids, ' AND state = 0');
          await this.notices.enqueue(tx, peer, 'cancel', ids);
        }
      });
      this.counts.clear();
      this.log.warn({ op: 'abandon', keys: stale.length }, 'kme: unfinished deliveries removed and cancelled');
    }
    await this.notices.kickAll();
  }

  /** New credentials for the calls to every peer (see PeerClient.updateTls). */
  async updatePeerTls(tls: PeerTls): Promise<void> {
    await Promise.all([...this.peerClients.values()].map((c) => c.updateTls(tls)));
  }

  async close(): Promise<void> {
    await this.notices.idle();
    await this.writes.idle();
    await Promise.all([...this.peerClients.values()].map((c) => c.close()));
  }
}
