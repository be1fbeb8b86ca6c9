// Notices from this KME to a peer that must not be lost: "cancel these deliveries" (the
// origin gave up on them), "these answers may never have reached a client" (orphaned: the
// peer keeps them only briefly) and "these keys were retrieved" (the origin may drop its copy).
// They are written to the outbox in the same transaction as the change they report, then
// sent in batches; failures are retried by maintenance until the notice expires.
import type { Queryable } from '../storage/db.js';
import type { Logger } from './logger.js';
import type { PeerClient } from './peer-client.js';
import type { KeyStore, OutboxKind } from './store.js';

const NOTICE_GATHER_MS = 25;

const PATHS: Record<OutboxKind, string> = {
  cancel: '/internal/v1/keys/cancel',
  retrieved: '/internal/v1/keys/retrieved',
  orphaned: '/internal/v1/keys/orphaned',
};

export class NoticeSender {
  private running = new Set<string>();
  private again = new Set<string>();

  constructor(
    private readonly store: KeyStore,
    private readonly peers: Map<string, PeerClient>,
    private readonly ttlMs: number,
    private readonly log: Logger,
  ) {}

  enqueue(q: Queryable, peer: string, kind: OutboxKind, ids: readonly string[]): Promise<void> {
    return this.store.enqueue(q, peer, kind, ids, Date.now() + this.ttlMs);
  }

  /** Starts sending the peer's notices now (coalesced when already sending). */
  kick(peer: string): void {
    if (this.running.has(peer)) {
      this.again.add(peer);
      return;
    }
    this.running.add(peer);
    // A short pause gathers the notices of concurrent requests into one call.
    void new Promise((r) => setTimeout(r, NOTICE_GATHER_MS))
      .then(() => this.drain(peer))
      .finally(() => {
        this.running.delete(peer);
        if (this.again.delete(peer)) this.kick(peer);
      });
  }

  async kickAll(): Promise<void> {
    for (const peer of await this.store.outboxPeers()) this.kick(peer);
  }

  /** Resolves when no drain is running (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await new Promise((r) => setTimeout(r, 10));
  }

  private async drain(peer: string): Promise<void> {
    const client = this.peers.get(peer);
    if (!client) return;
    for (;;) {
      const entries = await this.store.outbox(peer, 500).catch(() => []);
      if (entries.length === 0) return;
      for (const kind of ['cancel', 'orphaned', 'retrieved'] as const) {
        const mine = entries.filter((e) => e.kind === kind);
        if (mine.length === 0) continue;
        try {
          await client.post(PATHS[kind], { key_IDs: mine.map((e) => e.key_id) });
          await this.store.deleteOutbox(mine.map((e) => e.id));
        } catch (err) {
          this.log.warn({ peer, kind, keys: mine.length, reason: (err as Error).message }, 'kme: notice to peer not delivered; will retry');
          return;
        }
      }
    }
  }
}
