// A site's post-quantum parts (docs/post-quantum.md), wired in one place so the KME core
// stays unaware of them: the TLS groups and requirePostQuantum of the listener and of each
// peer link, the group each link negotiated, the per-link ML-KEM-768 ratchets and their
// inter-KME endpoints, and /healthz and /metrics with the links' state.
import type { TLSSocket } from 'node:tls';

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import type { KmeConfig } from '../config/sections/kme.js';
import { identityFromCertificate } from '../pki/identity.js';
import { hybridOnly, LinkGroups, refusals, tlsRegistry, watchServer, type ConnectionVerdict } from '../pqtls/index.js';
import { COMMIT_PATH, LinkRatchet, NUDGE_PATH, OFFER_PATH, RatchetError, RatchetStore } from '../pqlink/index.js';
import type { Db } from '../storage/db.js';
import { pskFingerprint } from './derive.js';
import { unauthorized } from './errors.js';
import type { LinkKeys } from './link-keys.js';
import type { Logger } from './logger.js';
import { PeerCallError, type PeerClient, type PeerKeyExchange } from './peer-client.js';
import { callerOf } from './server.js';
import type { SiteKey } from './site-key.js';

export class SitePostQuantum {
  readonly groups = new LinkGroups();
  readonly ratchets = new Map<string, LinkRatchet>();
  private readonly store: RatchetStore;

  constructor(
    private readonly config: KmeConfig,
    db: Db,
    siteKey: SiteKey,
    private readonly psks: Record<string, Buffer | undefined>,
    private readonly log: Logger,
  ) {
    this.store = new RatchetStore(db, siteKey);
  }

  migrate(): Promise<void> {
    return this.store.migrate();
  }

  /** How this site's calls to `peerId` use TLS key exchange. */
  keyExchange(peerId: string): PeerKeyExchange {
    const peer = this.config.peers[peerId]!;
    return {
      // A link that requires post-quantum offers only its hybrid groups, so a classical
      // peer fails the handshake (with an alert) rather than after it.
      groups: peer.requirePostQuantum ? hybridOnly(peer.groups) : peer.groups,
      requirePostQuantum: peer.requirePostQuantum,
      log: this.log,
      onGroup: (group) => this.groups.record(peerId, 'outbound', group),
    };
  }

  /** The link's ratchet (KmeService's linkKeys hook); undefined for a link with `ratchet: false`. */
  linkKeys(peerId: string, client: PeerClient): LinkKeys | undefined {
    if (!this.config.peers[peerId]!.ratchet) return undefined;
    const psk = this.psks[peerId];
    const ratchet = new LinkRatchet({
      site: this.config.id,
      peer: peerId,
      ...(psk ? { psk, pskFingerprint: pskFingerprint(psk) } : {}),
      store: this.store,
      log: this.log,
      epochMs: this.config.ratchet.epochSeconds * 1000,
      epochKeys: this.config.ratchet.epochKeys,
      // Deliveries of the old epoch finish within the peer timeout; then its secret goes.
      graceMs: 2 * this.config.peerTimeoutMs + 5000,
      call: async (path, body) => {
        try {
          return await client.post(path, body);
        } catch (err) {
          if (!(err instanceof PeerCallError) || err.status === undefined) throw err;
          throw Object.assign(new Error(err.message), { status: err.status, details: err.details?.[0] });
        }
      },
    });
    this.ratchets.set(peerId, ratchet);
    return ratchet;
  }

  /** Reads each link's sealed ratchet state (the chain survives restarts). */
  async load(): Promise<void> {
    for (const r of this.ratchets.values()) await r.load();
  }

  /**
   * The groups the listener offers. With kme.requirePostQuantum only its hybrid groups: a
   * client that offers none of them fails the TLS handshake with a handshake_failure alert
   * (instead of a reset after it), peers included.
   */
  listenerGroups(): string {
    return this.config.requirePostQuantum ? hybridOnly(this.config.tls.groups) : this.config.tls.groups;
  }

  /** Counts, logs and (where required) refuses each connection to the listener. */
  watch(app: FastifyInstance): void {
    if (this.config.requirePostQuantum) {
      const accepted = this.listenerGroups();
      app.server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: TLSSocket) => {
        if (err.code !== 'ERR_SSL_NO_SUITABLE_KEY_SHARE' && err.code !== 'ERR_SSL_NO_SHARED_GROUP') return;
        refusals.inc({ face: 'kme-sae' });
        this.log.warn(
          { face: 'kme-sae', offered: `none of ${accepted}`, accepted, reason: err.code, remote: socket.remoteAddress },
          'tls: handshake refused: the client offered no post-quantum hybrid group (requirePostQuantum)',
        );
      });
    }
    watchServer(app.server, {
      face: 'kme-sae',
      log: this.log,
      classify: (socket: TLSSocket): ConnectionVerdict => {
        const cert = socket.authorized ? socket.getPeerX509Certificate() : undefined;
        const who = cert ? identityFromCertificate(cert) : null;
        const peer = who?.role === 'kme' ? this.config.peers[who.id] : undefined;
        if (peer) return { face: 'kme-link-server', requireHybrid: peer.requirePostQuantum, who: { peer: who!.id } };
        return { face: 'kme-sae', requireHybrid: this.config.requirePostQuantum, who: { client: who?.id ?? null } };
      },
      onGroup: (_socket, group, verdict) => {
        if (verdict.face === 'kme-link-server' && group) this.groups.record(String(verdict.who?.peer), 'inbound', group);
      },
    });
  }

  /** The link as the status extension and /healthz show it. */
  linkStatus(peerId: string): Record<string, unknown> {
    const peer = this.config.peers[peerId];
    return {
      tls: { ...this.groups.get(peerId), require_post_quantum: peer?.requirePostQuantum ?? false },
      ratchet: this.ratchets.get(peerId)?.status() ?? null,
    };
  }

  routes(app: FastifyInstance): void {
    const ratchetOf = (request: FastifyRequest): LinkRatchet => {
      const caller = callerOf(request);
      const ratchet = caller.role === 'kme' ? this.ratchets.get(caller.id) : undefined;
      if (!ratchet) throw unauthorized(`'${caller.id}' is not a peer with a ratcheted link to '${this.config.id}'`);
      return ratchet;
    };
    const answer = async (reply: FastifyReply, work: () => Promise<unknown>): Promise<FastifyReply> => {
      try {
        return reply.code(200).header('cache-control', 'no-store').send(await work());
      } catch (err) {
        if (!(err instanceof RatchetError)) throw err;
        return reply.code(err.status).send({ message: err.message, details: [err.details] });
      }
    };
    app.post(OFFER_PATH, async (request, reply) => answer(reply, () => ratchetOf(request).onOffer(request.body)));
    app.post(COMMIT_PATH, async (request, reply) => answer(reply, () => ratchetOf(request).onCommit(request.body)));
    app.post(NUDGE_PATH, async (request, reply) => answer(reply, () => ratchetOf(request).onNudge(request.body)));

    app.get('/healthz', async (request, reply) => {
      callerOf(request);
      const links = Object.fromEntries(Object.keys(this.config.peers).map((id) => [id, this.linkStatus(id)]));
      return reply.header('cache-control', 'no-store').send({ status: 'ok', kme: this.config.id, links });
    });
    app.get('/metrics', async (request, reply) => {
      callerOf(request);
      return reply.type(tlsRegistry.contentType).send(await tlsRegistry.metrics());
    });
  }

  start(): void {
    for (const r of this.ratchets.values()) r.start();
  }

  async maintain(): Promise<void> {
    for (const [peer, r] of this.ratchets) {
      await r.maintain().catch((err: Error) => this.log.warn({ peer, reason: err.message }, 'pqlink: maintenance failed'));
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.ratchets.values()].map((r) => r.close()));
  }
}
