// One running KME site: reads its certificate, CA, site key and link PSKs, opens and
// migrates its key store, serves HTTPS and runs maintenance (expiry, abandoned deliveries,
// notices owed to peers). Used by the `kme` role of `qentropy daemon` and by tests.
import { promises as fs } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server as TlsServer } from 'node:tls';

import type { FastifyInstance } from 'fastify';

import type { KmeConfig } from '../config/sections/kme.js';
import { openDatabase, type Db } from '../storage/db.js';
import { silentLogger, type Logger } from './logger.js';
import { SitePostQuantum } from './post-quantum.js';
import { type SeedSource } from './seed-source.js';
import { buildKmeServer } from './server.js';
import { KmeService } from './service.js';
import { loadPsk, SiteKey } from './site-key.js';
import { KeyStore } from './store.js';

export interface KmeSiteDeps {
  seedSource: SeedSource;
  /** An open database; default: open `config.storage` (required then). */
  db?: Db;
  logger?: Logger;
  /** Passed to Fastify for request logs (a pino instance); default none. */
  httpLogger?: object | false;
}

export class KmeSite {
  private timer: NodeJS.Timeout | undefined;
  private maintaining: Promise<void> | undefined;

  private constructor(
    readonly config: KmeConfig,
    readonly service: KmeService,
    readonly app: FastifyInstance,
    private readonly db: Db,
    private readonly ownsDb: boolean,
    private readonly log: Logger,
    readonly pq: SitePostQuantum,
  ) {}

  static async create(config: KmeConfig, deps: KmeSiteDeps): Promise<KmeSite> {
    const tls = await readSiteTls(config);
    const siteKey = await SiteKey.load(config.siteKeyFile);
    const psks: Record<string, Buffer | undefined> = {};
    for (const [id, p] of Object.entries(config.peers)) psks[id] = p.pskFile ? await loadPsk(p.pskFile) : undefined;
    let db = deps.db;
    const ownsDb = db === undefined;
    if (!db) {
      if (!config.storage) throw new Error('kme.storage: no storage URL for the key store');
      db = await openDatabase({ url: config.storage });
    }
    try {
      const store = new KeyStore(db);
      await store.migrate();
      const log = deps.logger ?? silentLogger;
      const pq = new SitePostQuantum(config, db, siteKey, psks, log);
      await pq.migrate();
      // A crash between an erasure and its scrub left copies in the WAL: none survive a restart.
      await db.scrub().catch((err: Error) => log.warn({ reason: err.message }, 'kme: could not scrub the key store at start; erased keys may stay in its files until the next erasure'));
      const peers = Object.fromEntries(
        Object.entries(config.peers).map(([id, p]) => [id, { url: p.url, ...(psks[id] ? { psk: psks[id] } : {}), keyExchange: pq.keyExchange(id) }]),
      );
      const service = new KmeService({
        id: config.id,
        peers,
        linkKeys: (id, client) => pq.linkKeys(id, client),
        linkStatus: (id) => pq.linkStatus(id),
        saes: config.saes,
        keySize: config.keySize,
        minKeySize: config.minKeySize,
        maxKeySize: config.maxKeySize,
        maxKeyPerRequest: config.maxKeyPerRequest,
        maxKeyCount: config.maxKeyCount,
        maxKeyCountPerSae: config.maxKeyCountPerSae,
        saeRateLimit: config.saeRateLimit,
        siteAddressedKeys: config.siteAddressedKeys,
        maxSaeIdCount: config.maxSaeIdCount,
        keyTtlSeconds: config.keyTtlSeconds,
        orphanKeyTtlSeconds: config.orphanKeyTtlSeconds,
        peerTimeoutMs: config.peerTimeoutMs,
        tls,
        store,
        siteKey,
        seedSource: deps.seedSource,
        logger: log,
      });
      await pq.load();
      const app = buildKmeServer({
        service,
        tls: { ...tls, groups: pq.listenerGroups() },
        logger: deps.httpLogger ?? false,
        maxConnections: config.maxConnections,
        requestTimeoutMs: config.requestTimeoutMs,
      });
      pq.watch(app);
      pq.routes(app);
      return new KmeSite(config, service, app, db, ownsDb, log, pq);
    } catch (err) {
      if (ownsDb) await db.close();
      throw err;
    }
  }

  /** Listens on config.listen and starts maintenance; resolves to the base URL. */
  async start(): Promise<string> {
    await this.app.listen({ host: this.config.listen.host, port: this.config.listen.port });
    this.timer = setInterval(() => this.runMaintenance(), this.config.maintenanceSeconds * 1000);
    this.timer.unref();
    this.runMaintenance();
    this.pq.start();
    this.log.info({ url: this.url, groups: this.pq.listenerGroups() }, 'kme: listening');
    if (this.config.siteAddressedKeys.mode === 'any-sae') {
      this.log.warn(
        { setting: 'kme.siteAddressedKeys' },
        `kme: keys addressed to site '${this.config.id}' (not to an SAE) can be fetched by any SAE of the site that knows the key ID; set kme.siteAddressedKeys to say which may`,
      );
    }
    return this.url;
  }

  get port(): number {
    return (this.app.server.address() as AddressInfo).port;
  }

  get url(): string {
    const host = this.config.listen.host === '0.0.0.0' || this.config.listen.host === '::' ? '127.0.0.1' : this.config.listen.host;
    return `https://${host.includes(':') ? `[${host}]` : host}:${this.port}`;
  }

  /**
   * Re-reads the site's certificate, key and CA (a renewal, or a new cluster CA) and uses
   * them for new connections in both directions: SAEs and peers connecting here, and this
   * site's calls to its peers. Connections already open keep the credentials they were
   * made with. Nothing changes when the files do not form a usable set (unreadable, a key
   * that does not match the certificate, a CA that does not parse).
   */
  async reloadTls(): Promise<void> {
    const tls = await readSiteTls(this.config);
    // setSecureContext builds the new context before it replaces the old one, so a set
    // that does not fit together throws here with every connection unaffected.
    try {
      (this.app.server as unknown as TlsServer).setSecureContext({ cert: tls.cert, key: tls.key, ca: tls.ca, minVersion: 'TLSv1.3', ecdhCurve: this.pq.listenerGroups() });
    } catch (err) {
      throw new Error(`kme.tls: the new certificate, key and CA are not usable together: ${(err as Error).message}`);
    }
    await this.service.updatePeerTls(tls);
  }

  /** One maintenance pass now (also what the timer runs); overlapping passes are skipped. */
  runMaintenance(): Promise<void> {
    this.maintaining ??= this.service
      .maintain()
      .then(() => this.pq.maintain())
      .catch((err: Error) => this.log.warn({ reason: err.message }, 'kme: maintenance pass failed'))
      .finally(() => {
        this.maintaining = undefined;
      });
    return this.maintaining;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    // Closing closes the idle keep-alive connections once; one whose request was still
    // running (a peer's notice, say) stays open after its answer and the close never
    // finished. Close idle connections again until it has.
    const server = this.app.server as unknown as { closeIdleConnections?: () => void };
    const sweep = setInterval(() => server.closeIdleConnections?.(), 100);
    try {
      await this.app.close();
    } finally {
      clearInterval(sweep);
    }
    await this.maintaining;
    await this.service.close();
    await this.pq.close();
    if (this.ownsDb) await this.db.close();
  }
}

/** The site's certificate chain, key and cluster CA, each file named when it cannot be read. */
async function readSiteTls(config: KmeConfig): Promise<{ cert: string; key: string; ca: string }> {
  const read = async (what: string, file: string): Promise<string> => {
    try {
      return await fs.readFile(file, 'utf8');
    } catch (err) {
      throw new Error(`kme.tls.${what}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
  };
  return { cert: await read('cert', config.tls.cert), key: await read('key', config.tls.key), ca: await read('ca', config.tls.ca) };
}
