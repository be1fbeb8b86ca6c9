// One site's KME, independent of HTTP: the ETSI operations for SAEs (status, enc_keys,
// dec_keys) and the inter-KME operations for peers (deliver, cancel, retrieved, orphaned),
// with the authorisation rules of docs/kme.md. The HTTP layer only identifies the caller
// from its certificate and turns EtsiErrors into responses.
import type { SiteAddressedPolicy } from '../config/sections/kme.js';
import type { CertIdentity } from '../pki/identity.js';
import { isValidId } from '../pki/identity.js';
import { deriveKey, SEED_BYTES, SUITE_WRAPPED_SUFFIX, wrapForSite } from './derive.js';
import { badRequest, ETSI_MESSAGES, EtsiError, unauthorized, unavailable } from './errors.js';
import { GroupCommit } from './group-commit.js';
import { LinkSender, type WireKey } from './link.js';
import { asEtsiError, StaticLinkKeys, wipeSecrets, type LinkKeyContext, type LinkKeys } from './link-keys.js';
import { silentLogger, type Logger } from './logger.js';
import { mintKeys, seedBytes, type KeyItem } from './mint.js';
import { MulticastSender } from './multicast.js';
import { KeyRateLimit } from './rate-limit.js';
import { PeerRooms, type DeliveryRefusal, type Room, type RoomReport } from './room.js';
import { NoticeSender } from './notices.js';
import { PeerClient, type PeerKeyExchange, type PeerTls } from './peer-client.js';
import { isKeyId, type EncKeysRequest, type KeyIdItem, type Limits } from './requests.js';
import { SeedUnavailableError, type SeedSource } from './seed-source.js';
import type { SiteKey } from './site-key.js';
import { ACTIVE, ANSWERING, ANY_SAE, KeyStore, PENDING, type KeyRow } from './store.js';

export interface KmeServiceOptions extends Limits {
  id: string;
  peers: Record<string, { url: string; psk?: Buffer; keyExchange?: PeerKeyExchange }>;
  /** Per peer: how its keys are derived (default: StaticLinkKeys over its PSK). */
  linkKeys?: (peerId: string, peer: PeerClient) => LinkKeys | undefined;
  saes: Record<string, string>;
  maxKeyCount: number;
  /** Keys one master SAE may have waiting at this site per link (default: maxKeyCount). */
  maxKeyCountPerSae?: number;
  /** Keys one SAE certificate may ask for per window (default: unlimited). */
  saeRateLimit?: { keys: number; seconds: number };
  /** Who may fetch keys addressed to this site rather than to an SAE (default: any SAE of it). */
  siteAddressedKeys?: SiteAddressedPolicy;
  keyTtlSeconds: number;
  /** How long a peer keeps keys whose enc_keys answer a crash may have lost (see maintain). */
  orphanKeyTtlSeconds: number;
  peerTimeoutMs: number;
  tls: PeerTls;
  store: KeyStore;
  siteKey: SiteKey;
  seedSource: SeedSource;
  logger?: Logger;
  /** What `status` reports about a link in `status_extension` (TLS group, ratchet epoch). */
  linkStatus?: (peerId: string) => Record<string, unknown>;
}

export type { KeyItem } from './mint.js';

export interface KeyContainer {
  keys: KeyItem[];
}

/** New keys for an enc_keys answer, and what the HTTP layer reports once it has been sent. */
export interface IssuedKeys {
  container: KeyContainer;
  /** `written`: the whole answer left this process (false: the connection closed first). */
  settle(written: boolean): void;
}

export interface StatusReply {
  source_KME_ID: string;
  target_KME_ID: string;
  master_SAE_ID: string;
  /** Left out for a site-addressed path: no SAE is the slave yet (status_extension.slave says so). */
  slave_SAE_ID?: string;
  key_size: number;
  stored_key_count: number;
  max_key_count: number;
  max_key_per_request: number;
  max_key_size: number;
  min_key_size: number;
  max_SAE_ID_count: number;
  /**
   * `link_keys_held`: keys of the link held at this site now, in both directions; with the
   * post-quantum parts, also the link's key exchange (TLS group, suite, ratchet epoch).
   */
  status_extension: { link_keys_held: number } & Record<string, unknown>;
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
  private readonly multicast: MulticastSender;
  readonly linkKeys = new Map<string, LinkKeys>();
  private readonly counts = new Map<string, { n: number; at: number }>();
  /** Keys held here per (origin site, master SAE), cached like `counts`: the per-SAE share. */
  private readonly ownerCounts = new Map<string, { n: number; at: number }>();
  /** What each peer last said about its room for new keys (the origin's view of the peer's limits). */
  private readonly peerRooms = new PeerRooms();
  private readonly rateLimit: KeyRateLimit | undefined;
  private readonly siteAddressed: SiteAddressedPolicy;
  private readonly maxKeyCountPerSae: number;
  /** Keys whose enc_keys answer this process is writing: maintenance leaves them alone. */
  private readonly answering = new Set<string>();
  /** Settlements under way (close waits for them, so their deletes land before the store closes). */
  private readonly settling = new Set<Promise<void>>();
  /** A scrub after an erasure failed: maintenance tries again. */
  private scrubOwed = false;

  constructor(private readonly opts: KmeServiceOptions) {
    this.id = opts.id;
    this.store = opts.store;
    this.log = opts.logger ?? silentLogger;
    this.siteAddressed = opts.siteAddressedKeys ?? { mode: 'any-sae' };
    this.maxKeyCountPerSae = opts.maxKeyCountPerSae ?? opts.maxKeyCount;
    this.rateLimit = opts.saeRateLimit ? new KeyRateLimit(opts.saeRateLimit.keys, opts.saeRateLimit.seconds) : undefined;
    this.writes = new GroupCommit(this.store.db);
    this.notices = new NoticeSender(this.store, this.peerClients, opts.keyTtlSeconds * 1000, this.log);
    for (const [peerId, peer] of Object.entries(opts.peers)) {
      const client = new PeerClient(peerId, peer.url, opts.tls, opts.peerTimeoutMs, peer.keyExchange);
      this.peerClients.set(peerId, client);
      const onReply = (reply: unknown): void => this.peerRooms.record(peerId, reply);
      this.senders.set(peerId, new LinkSender(client, this.store, this.writes, this.notices, this.log, { onReply }));
      this.linkKeys.set(peerId, opts.linkKeys?.(peerId, client) ?? new StaticLinkKeys(peer.psk));
    }
    this.multicast = new MulticastSender({ writes: this.writes, store: this.store, notices: this.notices, log: this.log }, this.peerClients, (site, reply) =>
      this.peerRooms.record(site, reply),
    );
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

  /**
   * ETSI §6.1 Table 9. Keys are made on request, so "the number of stored keys the KME can
   * deliver" is what enc_keys can still issue on the link before its store is full:
   * max_key_count minus the keys of the link held here (reported as link_keys_held).
   */
  async status(caller: CertIdentity, id: string): Promise<StatusReply> {
    const sae = this.localSae(caller);
    const target = this.resolveTarget(id);
    const [held, peer] = await Promise.all([this.store.countLink(this.id, target.site), this.refreshPeerRoom(target.site, sae)]);
    this.counts.set(target.site, { n: held, at: Date.now() });
    const here = Math.max(0, this.opts.maxKeyCount - held);
    const slave = target.sae !== undefined ? { slave_SAE_ID: target.sae } : {};
    return {
      source_KME_ID: this.id,
      target_KME_ID: target.site,
      master_SAE_ID: sae,
      ...slave,
      key_size: this.opts.keySize,
      // What this caller can get now: this site's room on the link, and the peer's room for
      // the link and for this SAE's share there (as the peer last said; see peer_room).
      stored_key_count: Math.min(here, peer?.link ?? here, peer?.sae ?? here),
      max_key_count: this.opts.maxKeyCount,
      max_key_per_request: this.opts.maxKeyPerRequest,
      max_key_size: this.opts.maxKeySize,
      min_key_size: this.opts.minKeySize,
      max_SAE_ID_count: this.multicastLimit(target),
      status_extension: {
        ...this.opts.linkStatus?.(target.site),
        link_keys_held: held,
        peer_room: peer ? { link: peer.link, sae: peer.sae, as_of: new Date(peer.at).toISOString() } : null,
        ...(target.sae === undefined ? { slave: this.siteAddressedNote(target.site) } : {}),
      },
    };
  }

  /** Why status has no slave_SAE_ID for a site-addressed path (ETSI defines it as an SAE ID). */
  private siteAddressedNote(site: string): Record<string, unknown> {
    return {
      site_addressed: true,
      site,
      note: `no slave SAE is named: which SAEs of site '${site}' may fetch the keys is its kme.siteAddressedKeys policy`,
    };
  }

  /**
   * Asks the peer how many keys it can still take on the link and from this SAE; keeps the
   * last answer (also refreshed by every delivery) when the peer cannot say now.
   */
  private async refreshPeerRoom(site: string, sae: string): Promise<Room | undefined> {
    const client = this.peerClients.get(site)!;
    try {
      const reply = await client.post('/internal/v1/keys/room', { master_SAE_ID: sae });
      this.peerRooms.record(site, reply);
    } catch (err) {
      this.log.debug({ peer: site, reason: (err as Error).message }, 'kme: peer room unknown now; using its last answer');
    }
    return this.peerRooms.get(site, sae);
  }

  /**
   * Additional slave SAEs a request to `target` may name: SAEs registered in `kme.saes` to
   * a peer site (other than the slave in the path), at most maxSaeIdCount.
   */
  private multicastLimit(target: Target): number {
    const candidates = Object.entries(this.opts.saes).filter(([sae, site]) => this.peerClients.has(site) && sae !== target.sae).length;
    return Math.min(this.opts.maxSaeIdCount, candidates);
  }

  /**
   * The slave SAEs of a new key by site: the target's site first (with the path's SAE, if
   * any), then every further site an additional slave SAE belongs to. Each additional SAE
   * must be registered in `kme.saes` to a peer site; anything else is refused.
   */
  private slavesBySite(target: Target, additional: readonly string[]): Map<string, string[]> {
    const bySite = new Map<string, string[]>([[target.site, target.sae ? [target.sae] : []]]);
    const refused: Array<Record<string, unknown>> = [];
    for (const extra of additional) {
      if (extra === target.sae) {
        // Counted twice it would let a list one longer than max_SAE_ID_count through.
        refused.push({ additional_slave_SAE_ID: extra, problem: 'the slave SAE of the path; list only further SAEs' });
        continue;
      }
      const site = this.opts.saes[extra];
      if (site === undefined || !this.peerClients.has(site)) {
        refused.push({
          additional_slave_SAE_ID: extra,
          problem: site === undefined ? 'not an SAE known to this KME (register it in kme.saes with its site)' : `an SAE of this site '${site}'`,
        });
        continue;
      }
      const list = bySite.get(site) ?? [];
      if (!list.includes(extra)) list.push(extra);
      bySite.set(site, list);
    }
    if (refused.length > 0) throw badRequest('additional_slave_SAE_IDs must name SAEs of peer sites registered in kme.saes', refused);
    return bySite;
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

  private takeRate(sae: string, n: number): void {
    const taken = this.rateLimit?.take(sae, n);
    if (!taken || taken.ok) return;
    const { keys, seconds } = this.rateLimit!;
    throw unavailable(`SAE '${sae}' has asked for keys faster than its rate limit (kme.saeRateLimit: ${keys} keys per ${seconds} s)`, [
      { SAE_ID: sae, rate_limit_keys: keys, rate_limit_seconds: seconds, retry_after_seconds: taken.retryAfterSeconds },
    ], taken.retryAfterSeconds);
  }

  /** The keys from `origin` made by `owner` held here (cached for a second, as `counts`). */
  private async ownerCount(origin: string, owner: string): Promise<{ n: number; at: number }> {
    const key = `${origin}\n${owner}`;
    const now = Date.now();
    let entry = this.ownerCounts.get(key);
    if (!entry || now - entry.at > COUNT_CACHE_MS) {
      entry = { n: await this.store.countOwner(origin, this.id, owner), at: now };
      this.ownerCounts.set(key, entry);
    }
    return entry;
  }

  /** This site's room for new keys from `origin`: on the link, and in `owner`'s share of it. */
  async room(caller: CertIdentity, body: unknown): Promise<{ room: RoomReport; max_key_count: number; max_key_count_per_SAE: number }> {
    const origin = this.callerKme(caller);
    const owner = (body as { master_SAE_ID?: unknown } | null)?.master_SAE_ID;
    if (typeof owner !== 'string' || !isValidId(owner)) throw badRequest('master_SAE_ID must be an SAE ID');
    const [held, mine] = await Promise.all([this.store.countLink(this.id, origin), this.ownerCount(origin, owner)]);
    return {
      room: { link: Math.max(0, this.opts.maxKeyCount - held), saes: { [owner]: Math.max(0, this.maxKeyCountPerSae - mine.n) } },
      max_key_count: this.opts.maxKeyCount,
      max_key_count_per_SAE: this.maxKeyCountPerSae,
    };
  }

  /**
   * The per-SAE share at this (the receiving) site: the keys of each master SAE whose share
   * has room are reserved; the others are refused, so one SAE that filled its share does
   * not fail the other SAEs' keys batched into the same delivery.
   */
  private async checkShares(origin: string, rows: KeyRow[]): Promise<{ accepted: KeyRow[]; refused: DeliveryRefusal[]; rooms: Record<string, number> }> {
    const byOwner = new Map<string, KeyRow[]>();
    for (const r of rows) {
      const mine = byOwner.get(r.owner);
      if (mine) mine.push(r);
      else byOwner.set(r.owner, [r]);
    }
    const accepted: KeyRow[] = [];
    const refused: DeliveryRefusal[] = [];
    const rooms: Record<string, number> = {};
    for (const [owner, mine] of byOwner) {
      const entry = await this.ownerCount(origin, owner);
      if (entry.n + mine.length > this.maxKeyCountPerSae) {
        refused.push({ master_SAE_ID: owner, key_IDs: mine.map((r) => r.key_id), stored_key_count: entry.n, max_key_count_per_SAE: this.maxKeyCountPerSae });
      } else {
        entry.n += mine.length;
        accepted.push(...mine);
      }
      rooms[owner] = Math.max(0, this.maxKeyCountPerSae - entry.n);
    }
    return { accepted, refused, rooms };
  }

  private release(link: string, n: number): void {
    const entry = this.counts.get(link);
    if (entry) entry.n = Math.max(0, entry.n - n);
  }

  // ---- enc_keys ---------------------------------------------------------------------

  async encKeys(caller: CertIdentity, id: string, req: EncKeysRequest): Promise<IssuedKeys> {
    const owner = this.localSae(caller);
    const target = this.resolveTarget(id);
    const slaves = this.slavesBySite(target, req.additionalSlaveSaeIds);
    const unnamed = [...slaves].filter(([, saes]) => saes.length === 0).map(([site]) => site);
    if (unnamed.length > 0 && this.siteAddressed.mode === 'refuse') {
      throw badRequest(`keys addressed to a site are refused here (kme.siteAddressedKeys is "refuse"): name the slave SAE in the path, /api/v1/keys/<SAE_ID>/enc_keys`, [
        { setting: 'kme.siteAddressedKeys', sites: unnamed },
      ]);
    }
    this.takeRate(owner, req.number);

    await this.reserve(target.site, req.number);
    let seeds: Buffer;
    const links = new Map<string, LinkKeyContext>();
    try {
      // Every site the keys go to derives them with its own link's current secret (its
      // ratchet epoch, or its PSK); a link that cannot give one refuses the whole request.
      for (const site of slaves.keys()) {
        links.set(site, await this.linkKeys.get(site)!.forSending(req.number).catch((err: unknown) => {
          throw asEtsiError(err);
        }));
      }
      seeds = await this.opts.seedSource.take(seedBytes(req.number, slaves.size));
    } catch (err) {
      wipeSecrets(links.values());
      this.release(target.site, req.number);
      if (err instanceof SeedUnavailableError) throw unavailable(`no entropy for new keys: ${err.message}`);
      throw err;
    }
    const created = Date.now();
    const { keys, rows, wire } = mintKeys({
      origin: this.id,
      owner,
      number: req.number,
      size: req.size,
      created,
      expires: created + this.opts.keyTtlSeconds * 1000,
      slaves,
      links,
      seeds,
      digest: (w) => this.digest(w),
    });

    try {
      if (slaves.size === 1) await this.senders.get(target.site)!.submit(rows, wire.get(target.site)!);
      else await this.multicast.submit(rows, wire);
    } catch (err) {
      this.release(target.site, req.number);
      // A refusal may mean another instance of this site moved a link's ratchet on: read
      // its state again now rather than at the next maintenance pass.
      for (const site of slaves.keys()) void this.linkKeys.get(site)!.resync?.().catch(() => undefined);
      throw err;
    }
    this.log.info({ op: 'enc_keys', sae: owner, peer: target.site, number: req.number, size: req.size }, 'kme: keys created');
    const ids = rows.map((r) => r.key_id);
    for (const k of ids) this.answering.add(k);
    let settled = false;
    return {
      container: { keys },
      settle: (written) => {
        if (settled) return;
        settled = true;
        const done: Promise<void> = this.settle([...slaves.keys()], ids, written).finally(() => this.settling.delete(done));
        this.settling.add(done);
      },
    };
  }

  /**
   * After an enc_keys answer: written whole, the origin's rows have served their purpose and
   * go; cut off before the end, the client cannot have its keys, so the peer is told to
   * cancel them. Either change is an ordinary group-commit operation nobody waits for.
   */
  private async settle(sites: string[], ids: string[], written: boolean): Promise<void> {
    try {
      await this.writes.run(async (tx) => {
        await this.store.deleteKeys(tx, ids, ' AND state = $1', [ANSWERING]);
        if (!written) for (const site of sites) await this.notices.enqueue(tx, site, 'cancel', ids);
      });
      this.release(sites[0]!, ids.length); // the slave's site: the link the keys were reserved on
      if (!written) {
        for (const site of sites) this.notices.kick(site);
        this.log.warn({ op: 'enc_keys', peers: sites, keys: ids.length }, 'kme: answer not delivered to the SAE; keys cancelled');
      }
    } catch (err) {
      // Maintenance settles the rows later, as after a crash.
      this.log.error({ err: (err as Error).message }, 'kme: could not settle answered keys now');
    } finally {
      for (const k of ids) this.answering.delete(k);
    }
  }

  private aad(keyId: string, origin: string, peer: string): Buffer {
    return Buffer.from(`${keyId}\n${origin}\n${peer}`, 'utf8');
  }

  /** A keyed fingerprint of a delivery, to tell a harmless retry from a conflicting one. */
  private digest(w: WireKey): string {
    return this.opts.siteKey.mac(
      JSON.stringify([
        w.key_ID, w.size, w.seed, w.origin, w.peer, w.created, w.suite, w.master_SAE_ID, w.slave_SAE_IDs, w.wrap ?? null,
        ...(w.epoch !== undefined ? [w.epoch] : []),
      ]),
    );
  }

  // ---- dec_keys ---------------------------------------------------------------------

  async decKeys(caller: CertIdentity, id: string, items: KeyIdItem[]): Promise<KeyContainer> {
    const sae = this.localSae(caller);
    const target = this.resolveTarget(id);
    const keyIds = items.map((i) => i.keyId);
    const now = Date.now();
    const origins = new Map<string, string[]>();

    const rows = await this.writes.run(async (tx) => {
      origins.clear();
      const found = await this.store.getKeys(tx, keyIds);
      // Only keys delivered here are served: the origin's SAE had its key in the enc_keys answer.
      const byId = new Map(found.filter((r) => r.peer === this.id && r.state === ACTIVE && r.expires > now).map((r) => [r.key_id, r]));
      // A key made by another master than the path (or the item's master_SAE_ID) names is
      // "not found", word for word as an unknown one: the answer must not reveal that it exists.
      // So is a site-addressed key this SAE may not fetch (kme.siteAddressedKeys).
      const notFound = items.filter((item) => {
        const row = byId.get(item.keyId);
        return !row || !this.madeBy(row, target, item.master) || !this.mayFetchSiteAddressed(row, sae);
      });
      if (notFound.length > 0) throw badRequest(ETSI_MESSAGES.keysNotFound, notFound.map((i) => ({ key_ID: i.keyId })));
      // §5.4: a caller that is not a slave SAE of the key is refused with 401.
      const refused = keyIds.filter((k) => {
        const waiting = byId.get(k)!.waiting;
        return waiting !== ANY_SAE && !waiting.split(',').includes(sae);
      });
      if (refused.length > 0) throw unauthorized('not authorised for the requested key', refused.map((key_ID) => ({ key_ID, problem: 'the key is not meant for this SAE' })));

      for (const keyId of keyIds) {
        const row = byId.get(keyId)!;
        const remaining = row.waiting === ANY_SAE ? [] : row.waiting.split(',').filter((s) => s !== sae);
        const changed =
          remaining.length === 0
            ? await tx.execute('DELETE FROM kme_keys WHERE key_id = $1 AND waiting = $2', [keyId, row.waiting])
            : await tx.execute('UPDATE kme_keys SET waiting = $1 WHERE key_id = $2 AND waiting = $3', [remaining.join(','), keyId, row.waiting]);
        // Another request retrieved it first (exactly once): refuse the whole request.
        if (changed !== 1) throw badRequest(ETSI_MESSAGES.keysNotFound, [{ key_ID: keyId }]);
        if (remaining.length === 0) {
          const list = origins.get(row.origin) ?? [];
          list.push(keyId);
          origins.set(row.origin, list);
        }
      }
      for (const [origin, ids] of origins) await this.notices.enqueue(tx, origin, 'retrieved', ids);
      return keyIds.map((k) => byId.get(k)!);
    });

    // Keys whose last SAE took them are deleted (`origins`); a key still waiting for others stays.
    if (origins.size > 0) await this.scrubErased();
    for (const [origin, ids] of origins) {
      this.release(origin, ids.length);
      this.notices.kick(origin);
    }
    // Keys fetched by their last slave give their master's share the room back (the cache
    // is counted down, not dropped: a recount scans the link's rows).
    const gone = new Set([...origins.values()].flat());
    for (const row of rows.filter((r) => gone.has(r.key_id))) {
      const entry = this.ownerCounts.get(`${row.origin}\n${row.owner}`);
      if (entry) entry.n = Math.max(0, entry.n - 1);
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

  /** Whether a key delivered here was made at the path's site (and by its SAE, or the item's master SAE, when named). */
  private madeBy(row: KeyRow, target: Target, master: string | undefined): boolean {
    if (row.origin !== target.site) return false;
    if (target.sae !== undefined && target.sae !== row.owner) return false;
    // An item's master_SAE_ID may be the origin's KME ID wherever the path may be (QuKayDee clients).
    return master === undefined || master === row.owner || master === row.origin;
  }

  /** kme.siteAddressedKeys at this (the receiving) site; keys that name their slave SAEs are not affected. */
  private mayFetchSiteAddressed(row: KeyRow, sae: string): boolean {
    if (row.waiting !== ANY_SAE) return true;
    const policy = this.siteAddressed;
    if (policy.mode === 'any-sae') return true;
    if (policy.mode === 'refuse') return false;
    const origins = policy.allow[sae] ?? [];
    return origins.includes(row.owner) || origins.includes(row.origin);
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
  async deliver(caller: CertIdentity, body: unknown): Promise<{ stored: number; refused: DeliveryRefusal[]; room: RoomReport }> {
    const origin = this.callerKme(caller);
    const list = (body as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_DELIVERY_KEYS) {
      throw badRequest(`keys must be an array of 1 to ${MAX_DELIVERY_KEYS} key metadata records`);
    }
    const now = Date.now();
    const expires = now + this.opts.keyTtlSeconds * 1000;
    const wire = list.map((item) => this.checkWireKey(item, origin));
    if (new Set(wire.map((w) => w.key_ID)).size !== wire.length) throw badRequest('duplicate key_ID in the delivery');
    if (this.siteAddressed.mode === 'refuse' && wire.some((w) => w.slave_SAE_IDs.length === 0)) {
      throw badRequest(`site '${this.id}' refuses keys addressed to the site rather than to an SAE (kme.siteAddressedKeys is "refuse")`, [
        { setting: 'kme.siteAddressedKeys', site: this.id },
      ]);
    }
    // One batch may straddle a ratchet epoch: resolve each (suite, epoch) once. A wrapped
    // key (a further site of a multicast key) derives its pad with this link's own suite
    // and epoch, so a mismatch refuses it like any other delivery of the link.
    const contexts = new Map<string, LinkKeyContext>();
    const tagOf = (w: WireKey): string => `${linkSuite(w)}\n${String(w.epoch)}`;
    for (const w of wire) {
      const tag = tagOf(w);
      if (contexts.has(tag)) continue;
      const n = wire.filter((x) => tagOf(x) === tag).length;
      contexts.set(tag, await this.linkKeys.get(origin)!.forReceiving(linkSuite(w), w.epoch, n).catch((err: unknown) => {
        wipeSecrets(contexts.values());
        throw asEtsiError(err);
      }));
    }
    const rows: KeyRow[] = wire.map((w) => {
      const seed = Buffer.from(w.seed, 'base64');
      const link = contexts.get(tagOf(w))!;
      const derived = deriveKey(seed, link.secret, { keyId: w.key_ID, size: w.size, origin: w.origin, peer: w.peer });
      seed.fill(0);
      // A key multicast to this site as a further one arrives wrapped with this link's derivation.
      const key = w.wrap === undefined ? derived : wrapForSite(Buffer.from(w.wrap, 'base64'), derived);
      if (key !== derived) derived.fill(0);
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
    wipeSecrets(contexts.values());

    const { accepted, refused, rooms } = await this.checkShares(origin, rows);
    const forget = (): void => accepted.forEach((r) => this.ownerCounts.delete(`${origin}\n${r.owner}`));
    // An origin that does not say it handles a partial answer (an older version) would
    // answer its SAEs with the refused keys too: refuse the whole delivery instead.
    if (refused.length > 0 && (body as { partial?: unknown }).partial !== true) {
      forget();
      const r = refused[0]!;
      throw unavailable(`SAE '${r.master_SAE_ID}' has used its share of the keys waiting at site '${this.id}' (kme.maxKeyCountPerSae)`, [
        { master_SAE_ID: r.master_SAE_ID, stored_key_count: r.stored_key_count, max_key_count_per_SAE: r.max_key_count_per_SAE },
      ]);
    }
    try {
      if (accepted.length > 0) await this.reserve(origin, accepted.length);
    } catch (err) {
      forget();
      throw err;
    }
    try {
      await this.writes.run(async (tx) => {
        const cancelled = new Set(await this.store.tombstoned(tx, accepted.map((r) => r.key_id)));
        // A delivery that arrives after the origin cancelled it is dropped: the origin told its SAE 503.
        const fresh = accepted.filter((r) => !cancelled.has(r.key_id));
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
      this.release(origin, accepted.length);
      forget();
      throw err;
    }
    if (refused.length > 0) this.log.warn({ op: 'deliver', peer: origin, refused: refused.map((r) => ({ sae: r.master_SAE_ID, keys: r.key_IDs.length })) }, 'kme: keys refused: the master SAE\'s share of the link is full');
    const linkHeld = this.counts.get(origin)?.n ?? 0;
    return { stored: accepted.length, refused, room: { link: Math.max(0, this.opts.maxKeyCount - linkHeld), saes: rooms } };
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
    if (w.wrap !== undefined && !w.suite.endsWith(SUITE_WRAPPED_SUFFIX)) throw bad(`a wrapped key's suite must end in '${SUITE_WRAPPED_SUFFIX}'`);
    if (w.epoch !== undefined && (typeof w.epoch !== 'number' || !Number.isSafeInteger(w.epoch) || w.epoch < 1)) throw bad('epoch must be a positive integer');
    if (typeof w.master_SAE_ID !== 'string' || !isValidId(w.master_SAE_ID)) throw bad('master_SAE_ID is not an SAE ID');
    if (!Array.isArray(w.slave_SAE_IDs) || !w.slave_SAE_IDs.every((s) => typeof s === 'string' && isValidId(s))) {
      throw bad('slave_SAE_IDs must be an array of SAE IDs');
    }
    if (w.wrap !== undefined && (typeof w.wrap !== 'string' || Buffer.from(w.wrap, 'base64').length !== w.size / 8)) {
      throw bad('wrap must be the key size, base64');
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
    if (n > 0) await this.scrubErased();
    this.release(origin, n);
    if (n > 0) this.ownerCounts.clear();
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

  /**
   * Peer side: the origin crashed while answering enc_keys for these keys, so their master
   * SAE may never have had them. Keep them only `orphanKeyTtlSeconds` (a slave that does
   * hold the ID still has that long), instead of letting unclaimable keys fill the link.
   */
  async orphaned(caller: CertIdentity, body: unknown): Promise<{ shortened: number }> {
    const origin = this.callerKme(caller);
    const ids = this.parseIdList(body);
    const until = Date.now() + this.opts.orphanKeyTtlSeconds * 1000;
    const n = await this.writes.run((tx) => this.store.shortenLife(tx, ids, until, origin, this.id));
    if (n > 0) this.log.info({ op: 'orphaned', peer: origin, keys: n }, 'kme: keys whose answer the origin may have lost expire soon');
    return { shortened: n };
  }

  // ---- maintenance ------------------------------------------------------------------

  /**
   * Expiry, what a crash of this origin left unsettled, and notices still owed to peers.
   * A PENDING key's answer was never sent: the peer cancels it. An ANSWERING key's answer
   * may or may not have reached its SAE: the peer keeps it `orphanKeyTtlSeconds` only.
   * Keys whose answer this process is still writing are left alone.
   */
  async maintain(now = Date.now()): Promise<void> {
    const expired = await this.store.sweepExpired(now);
    if (expired > 0 || this.scrubOwed) await this.scrubErased();
    if (expired > 0) {
      this.counts.clear();
      this.ownerCounts.clear();
      this.log.info({ op: 'expire', keys: expired }, 'kme: expired keys removed');
    }
    const stale = (await this.store.unsettled(this.id, now - 2 * this.opts.peerTimeoutMs - 5000)).filter((r) => !this.answering.has(r.key_id));
    if (stale.length > 0) {
      // Every site a key went to hears of it: its peer, and the further sites of a multicast key.
      const groups = new Map<string, { site: string; state: number; ids: string[] }>();
      for (const r of stale) {
        for (const site of [r.peer, ...r.waiting.split(',').filter(Boolean)]) {
          const k = `${r.state}\n${site}`;
          if (!groups.has(k)) groups.set(k, { site, state: r.state, ids: [] });
          groups.get(k)!.ids.push(r.key_id);
        }
      }
      await this.store.db.transaction(async (tx) => {
        await this.store.deleteKeys(tx, stale.map((r) => r.key_id), ' AND state IN ($1, $2)', [PENDING, ANSWERING]);
        for (const { site, state, ids } of groups.values()) await this.notices.enqueue(tx, site, state === PENDING ? 'cancel' : 'orphaned', ids);
      });
      this.counts.clear();
      const unsent = stale.filter((r) => r.state === PENDING).length;
      this.log.warn({ op: 'abandon', cancelled: unsent, orphaned: stale.length - unsent }, 'kme: deliveries a crash left unsettled were cancelled or orphaned at the peer');
    }
    await this.notices.kickAll();
  }

  /**
   * Sealed keys were deleted: the answer waits until no copy of them is left in the
   * database's files (docs/storage.md, "Erasure"), so a crash right after it cannot leave one
   * behind. A scrub that fails (another process kept reading) does not undo the operation;
   * the next maintenance pass tries again.
   */
  private async scrubErased(): Promise<void> {
    this.scrubOwed = false;
    await this.store.scrub().catch((err: Error) => {
      this.scrubOwed = true;
      this.log.warn({ reason: err.message }, 'kme: erased keys may stay in the database files until the next maintenance pass');
    });
  }

  /** New credentials for the calls to every peer (see PeerClient.updateTls). */
  async updatePeerTls(tls: PeerTls): Promise<void> {
    await Promise.all([...this.peerClients.values()].map((c) => c.updateTls(tls)));
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.settling);
    await this.notices.idle();
    await this.writes.idle();
    await Promise.all([...this.peerClients.values()].map((c) => c.close()));
  }
}

/** The suite of the link a delivery names: a wrapped key's suite without its '+wrap'. */
function linkSuite(w: WireKey): string {
  return w.wrap === undefined ? w.suite : w.suite.slice(0, -SUITE_WRAPPED_SUFFIX.length);
}
