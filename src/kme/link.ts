// The origin side of the two-phase delivery, batched per peer. Concurrent enc_keys calls
// for the same peer are gathered into one batch (no added wait: a batch leaves as soon as a
// slot is free): one operation stores them pending, one inter-KME call delivers them, one
// operation activates them. The operations go through the KME's group commit, where one
// batch's activation shares a transaction (one fsync) with the next batch's pending insert.
// Each caller's promise settles only after its keys are active (committed), so enc_keys
// never answers with a key the peer does not durably hold.
import type { Logger } from './logger.js';
import { unavailable, type EtsiError } from './errors.js';
import type { GroupCommit } from './group-commit.js';
import type { NoticeSender } from './notices.js';
import { PeerCallError, type PeerClient } from './peer-client.js';
import type { DeliveryRefusal } from './room.js';
import { ANSWERING, type KeyRow, type KeyStore } from './store.js';

/** One key's metadata as it crosses the link (never the key itself). */
export interface WireKey {
  key_ID: string;
  size: number;
  /** 256 fresh bits, base64. */
  seed: string;
  origin: string;
  peer: string;
  created: number;
  suite: string;
  /** The link's ratchet epoch the key derives from (ratcheted links only). */
  epoch?: number;
  master_SAE_ID: string;
  /** Empty: any SAE of the peer site may retrieve the key (once). */
  slave_SAE_IDs: string[];
  /** A key multicast to this site as a further one: key ⊕ this site's derivation, base64 (derive.ts). */
  wrap?: string;
}

export interface DeliverReply {
  stored: number;
  /** Keys the peer did not store because their master SAE's share there is full (older peers: absent). */
  refused?: DeliveryRefusal[];
}

/** The 503 for keys a peer refused because their master SAE's share is full: it names the SAE. */
export function shareFull(peer: string, r: DeliveryRefusal): EtsiError {
  return unavailable(`SAE '${r.master_SAE_ID}' has used its share of the keys waiting at site '${peer}' (kme.maxKeyCountPerSae there)`, [
    { peer, master_SAE_ID: r.master_SAE_ID, stored_key_count: r.stored_key_count, max_key_count_per_SAE: r.max_key_count_per_SAE },
  ]);
}

interface Item {
  rows: KeyRow[];
  wire: WireKey[];
  resolve: () => void;
  reject: (err: Error) => void;
}

export interface LinkSenderOptions {
  /**
   * Deliveries to the peer at once (default 1). One in flight makes each batch carry every
   * key asked for during the previous round trip: on loopback with 16 SAE clients, four
   * rounds alternated against 2 gave 1,607-2,155 against 1,062-1,772 keys/s and 0.60-0.79
   * against 0.77-1.12 ms of CPU per request (the peer commits once per delivery, so fewer,
   * larger deliveries cost it less). On a long link a batch still carries up to
   * maxBatchKeys keys per round trip.
   */
  maxInflight?: number;
  maxBatchKeys?: number;
  /** Sees every delivery answer (the peer's room for new keys). */
  onReply?: (reply: DeliverReply) => void;
}

export class LinkSender {
  private queue: Item[] = [];
  private inflight = 0;
  private readonly maxInflight: number;
  private readonly maxBatchKeys: number;
  private readonly onReply: ((reply: DeliverReply) => void) | undefined;

  constructor(
    private readonly peer: PeerClient,
    private readonly store: KeyStore,
    private readonly writes: GroupCommit,
    private readonly notices: NoticeSender,
    private readonly log: Logger,
    opts: LinkSenderOptions = {},
  ) {
    this.maxInflight = opts.maxInflight ?? 1;
    this.maxBatchKeys = opts.maxBatchKeys ?? 1024;
    this.onReply = opts.onReply;
  }

  /** Resolves once the peer has stored the keys and they are active here. */
  submit(rows: KeyRow[], wire: WireKey[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ rows, wire, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inflight < this.maxInflight && this.queue.length > 0) {
      const batch: Item[] = [];
      let keys = 0;
      while (this.queue.length > 0 && (batch.length === 0 || keys + this.queue[0]!.rows.length <= this.maxBatchKeys)) {
        const item = this.queue.shift()!;
        keys += item.rows.length;
        batch.push(item);
      }
      this.inflight++;
      let released = false;
      // The slot is freed as soon as the peer has confirmed, before the activation commit:
      // the next batch's pending insert then joins the same group commit as this batch's
      // activation (one fsync for both) instead of waiting for it.
      const release = (): void => {
        if (released) return;
        released = true;
        this.inflight--;
        this.pump();
      };
      void this.send(batch, release).finally(release);
    }
  }

  private async send(whole: Item[], delivered: () => void): Promise<void> {
    let batch = whole;
    const rows = batch.flatMap((i) => i.rows);
    const wire = batch.flatMap((i) => i.wire);
    let ids = rows.map((r) => r.key_id);
    const fail = (err: Error): void => batch.forEach((i) => i.reject(err));

    // Phase 1: pending here. A crash after this leaves pending rows that maintenance
    // removes (and cancels at the peer), never a half-delivered active key.
    try {
      await this.writes.run((tx) => this.store.insertKeys(tx, rows));
    } catch (err) {
      this.log.error({ err: (err as Error).message, peer: this.peer.peerId }, 'kme: storing pending keys failed');
      fail(unavailable('the key store is unavailable'));
      return;
    }

    // Phase 2: the peer stores them (idempotently) and confirms by answering 200.
    let reply: DeliverReply;
    try {
      reply = await this.peer.post<DeliverReply>('/internal/v1/keys/deliver', { keys: wire, partial: true });
    } catch (err) {
      const e = err instanceof PeerCallError ? err : new PeerCallError(String(err), true);
      this.log.warn({ peer: this.peer.peerId, keys: ids.length, reason: e.message }, 'kme: delivery to peer failed');
      await this.abandon(ids, e.maybeDelivered);
      fail(unavailable(e.status === 503 ? `peer KME '${this.peer.peerId}' cannot store keys now` : `peer KME '${this.peer.peerId}' did not confirm the keys`, [{ peer: this.peer.peerId, reason: e.message }]));
      return;
    }
    this.onReply?.(reply);
    // Requests whose master SAE's share at the peer is full were refused there (the peer
    // stored none of their keys); the rest of the batch goes on.
    if (reply.refused && reply.refused.length > 0) {
      const refusal = new Map(reply.refused.flatMap((r) => r.key_IDs.map((k) => [k, r] as const)));
      const refusedItems = batch.filter((i) => i.rows.some((r) => refusal.has(r.key_id)));
      batch = batch.filter((i) => !refusedItems.includes(i));
      ids = batch.flatMap((i) => i.rows.map((r) => r.key_id));
      await this.abandon(refusedItems.flatMap((i) => i.rows.map((r) => r.key_id)), false);
      for (const item of refusedItems) item.reject(shareFull(this.peer.peerId, refusal.get(item.rows.find((r) => refusal.has(r.key_id))!.key_id)!));
      if (batch.length === 0) return;
    }

    // Phase 3: the peer holds them; only now do the callers get their keys. ANSWERING until
    // the answer has left (KmeService settles them then, or maintenance after a crash).
    delivered();
    try {
      await this.writes.run((tx) => this.store.setState(tx, ids, ANSWERING));
    } catch (err) {
      this.log.error({ err: (err as Error).message, peer: this.peer.peerId }, 'kme: activating keys failed');
      await this.abandon(ids, true);
      fail(unavailable('the key store is unavailable'));
      return;
    }
    batch.forEach((i) => i.resolve());
  }

  private abandon(ids: string[], maybeDelivered: boolean): Promise<void> {
    return abandonDelivery({ writes: this.writes, store: this.store, notices: this.notices, log: this.log }, ids, maybeDelivered ? [this.peer.peerId] : []);
  }
}

export interface DeliveryContext {
  writes: GroupCommit;
  store: KeyStore;
  notices: NoticeSender;
  log: Logger;
}

/** Deletes undelivered keys here and tells the sites that may hold them to drop them. */
export async function abandonDelivery(ctx: DeliveryContext, ids: string[], maybeHeldBy: readonly string[]): Promise<void> {
  try {
    await ctx.writes.run(async (tx) => {
      await ctx.store.deleteKeys(tx, ids);
      for (const site of maybeHeldBy) await ctx.notices.enqueue(tx, site, 'cancel', ids);
    });
  } catch (err) {
    // Maintenance removes stale pending keys and cancels them later.
    ctx.log.error({ err: (err as Error).message }, 'kme: could not remove undelivered keys now');
  }
  for (const site of maybeHeldBy) ctx.notices.kick(site);
}
