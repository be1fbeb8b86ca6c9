// Delivery of keys to several sites at once (additional_slave_SAE_IDs at sites other than
// the slave's): the same two phases as LinkSender, with every site in phase 2. The keys are
// stored pending here, delivered to all sites concurrently, and made answerable only when
// every site has confirmed; if any site refuses or does not answer, the request gets 503,
// the keys are deleted here and every site that may hold them is told to cancel them. So a
// multicast key is at every named site or (after the cancels) at none. Not batched across
// requests: multicast is rare, and each request names its own set of sites.
import { unavailable } from './errors.js';
import { abandonDelivery, shareFull, type DeliveryContext, type DeliverReply, type WireKey } from './link.js';
import { PeerCallError, type PeerClient } from './peer-client.js';
import { ANSWERING, type KeyRow } from './store.js';

export class MulticastSender {
  constructor(
    private readonly ctx: DeliveryContext,
    private readonly peers: ReadonlyMap<string, PeerClient>,
    /** Sees every site's delivery answer (its room for new keys). */
    private readonly onReply?: (site: string, reply: DeliverReply) => void,
  ) {}

  /** Resolves once every site has stored the keys and they are answerable here. */
  async submit(rows: KeyRow[], wireBySite: ReadonlyMap<string, WireKey[]>): Promise<void> {
    const { writes, store, log } = this.ctx;
    const ids = rows.map((r) => r.key_id);
    const sites = [...wireBySite.keys()];
    try {
      await writes.run((tx) => store.insertKeys(tx, rows));
    } catch (err) {
      log.error({ err: (err as Error).message, sites }, 'kme: storing pending keys failed');
      throw unavailable('the key store is unavailable');
    }

    const outcomes = await Promise.allSettled(
      sites.map((site) => this.peers.get(site)!.post<DeliverReply>('/internal/v1/keys/deliver', { keys: wireBySite.get(site)!, partial: true })),
    );
    const failed = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [{ site: sites[i]!, error: asPeerError(o.reason) }] : []));
    outcomes.forEach((o, i) => o.status === 'fulfilled' && this.onReply?.(sites[i]!, o.value));
    // A site that refused the keys because the master SAE's share there is full stored none.
    const shares = outcomes.flatMap((o, i) => (o.status === 'fulfilled' && o.value.refused?.length ? [{ site: sites[i]!, refusal: o.value.refused[0]! }] : []));
    if (failed.length === 0 && shares.length > 0) {
      await abandonDelivery(this.ctx, ids, sites);
      throw shareFull(shares[0]!.site, shares[0]!.refusal);
    }
    if (failed.length > 0) {
      // Sites that stored the keys, and those that may have, must drop them.
      const maybeHeld = sites.filter((site, i) => outcomes[i]!.status === 'fulfilled' || failed.some((f) => f.site === site && f.error.maybeDelivered));
      log.warn({ sites, failed: failed.map((f) => ({ site: f.site, reason: f.error.message })), keys: ids.length }, 'kme: multicast delivery failed');
      await abandonDelivery(this.ctx, ids, maybeHeld);
      throw unavailable(`not every site named could store the keys (${failed.map((f) => f.site).join(', ')})`, failed.map((f) => ({ peer: f.site, reason: f.error.message })));
    }

    try {
      await writes.run((tx) => store.setState(tx, ids, ANSWERING));
    } catch (err) {
      log.error({ err: (err as Error).message, sites }, 'kme: activating keys failed');
      await abandonDelivery(this.ctx, ids, sites);
      throw unavailable('the key store is unavailable');
    }
  }
}

function asPeerError(reason: unknown): PeerCallError {
  return reason instanceof PeerCallError ? reason : new PeerCallError(String(reason), true);
}
