// The `entropy` role: source -> health gate -> pool (filled in the background) -> HTTPS API.
import fs from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';

import { AccountStore } from '../accounts/index.js';
import { insecureHttpWarning, isInsecureRemoteHttp, isLoopbackHost } from '../config/insecure-http.js';
import { readPrivateFile } from '../config/private-file.js';
import { healthMinEntropy, readAssessment } from '../ea/index.js';
import { EntropyPool, PoolFiller } from '../pool/index.js';
import { accountsFromStore } from '../server/account-store.js';
import { buildEntropyApp } from '../server/app.js';
import { createSource, parseSourceSpec, type BlockTester, type EntropySource } from '../sources/index.js';
import { openDatabase, parseStorageUrl, type Db } from '../storage/db.js';
import { InstanceLock } from '../storage/instance-lock.js';
import { loadServingTls, useNewCertificate, type ServingTls } from './tls-files.js';
import type { Role, RoleContext } from './types.js';

export interface EntropyRoleConfig {
  /** maxConnections: default 512 (src/listener). */
  listen: { host: string; port: number; maxConnections?: number };
  /** PEM files; required unless `plainHttp` is true. */
  tls?: { certFile: string; keyFile: string; minVersion?: 'TLSv1.2' | 'TLSv1.3'; groups?: string };
  /** Serve plain HTTP (loopback, or behind a TLS-terminating proxy). */
  plainHttp?: boolean;
  /** hwrng | device:PATH | rdseed | upstream | getrandom */
  source: string;
  upstream?: { url: string; token?: string; tokenFile?: string; caFile?: string; blocksPerRequest?: number; tlsGroups?: string; allowInsecureHttp?: boolean };
  pool?: { capacityBytes?: number; lowWaterBytes?: number; chunkBytes?: number };
  health?: { minEntropyPerByte?: number; assessment?: string; failureLimit?: number };
  /** sqlite:PATH or postgres://... */
  storageUrl: string;
  logRequests?: boolean;
  rateLimit?: { requests?: number; windowMs?: number };
}

/** Makes the SP 800-90B tester for raw sources; supplied by the daemon (native health module). */
export type TesterFactory = (minEntropyPerByte: number) => BlockTester;

export interface EntropyRoleDeps {
  createTester?: TesterFactory;
  /** Clock for accounts (tests). */
  now?: () => number;
}

export class EntropyRole implements Role {
  readonly name = 'entropy';
  private db: Db | undefined;
  private instanceLock: InstanceLock | undefined;
  private store: AccountStore | undefined;
  private source: EntropySource | undefined;
  private filler: PoolFiller | undefined;
  private app: FastifyInstance | undefined;
  private readonly logger: Logger;
  private readonly context: RoleContext;
  pool: EntropyPool | undefined;
  /** The address actually bound (port 0 in config picks a free port). */
  address: { host: string; port: number; url: string } | undefined;

  constructor(
    private readonly config: EntropyRoleConfig,
    context: RoleContext,
    private readonly deps: EntropyRoleDeps = {},
  ) {
    this.logger = context.logger.child({ role: 'entropy' });
    this.context = context;
  }

  async start(): Promise<void> {
    const { config } = this;
    const tls = await this.loadTls();
    const loopback = isLoopbackHost(config.listen.host);
    if (!tls && !loopback) {
      this.logger.warn({ host: config.listen.host }, 'serving plain HTTP on a non-loopback address: put a TLS proxy in front');
    }
    const spec = parseSourceSpec(config.source);
    // H for the SP 800-90B health tests: configured, or lowered to an assessment of the source.
    const assessed = config.health?.assessment ? await readAssessment(config.health.assessment, 'entropy.health.assessment') : undefined;
    const minEntropy = healthMinEntropy(config.health?.minEntropyPerByte ?? 7.5, assessed);
    const upstream = config.upstream ? await this.upstreamOptions(config.upstream) : undefined;
    this.source = createSource(spec, {
      ...(this.deps.createTester ? { createTester: () => this.deps.createTester!(minEntropy) } : {}),
      ...(config.health?.failureLimit !== undefined ? { failureLimit: config.health.failureLimit } : {}),
      onHealthEvent: (event) => {
        if (event.kind === 'ready') this.logger.info({ source: event.source }, 'source passed its start-up health tests');
        else if (event.kind === 'out-of-service') this.logger.error({ source: event.source, reason: event.reason }, 'entropy source taken out of service');
        else this.logger.warn({ source: event.source, tests: event.tests, detail: event.detail }, 'block failed a health test and was dropped');
      },
      ...(upstream ? { upstream } : {}),
    });
    if (this.source.development) {
      this.logger.warn(
        { source: this.source.name },
        'DEVELOPMENT SOURCE: entropy comes from the OS CSPRNG (getrandom), not a quantum source; do not use in production',
      );
    }
    const capacity = config.pool?.capacityBytes ?? 16 * 1024 * 1024;
    this.pool = new EntropyPool({
      capacity,
      lowWater: config.pool?.lowWaterBytes ?? Math.floor(capacity / 2),
    });
    if (this.context.shared) this.context.shared.entropyPool = this.pool;
    this.filler = new PoolFiller(this.pool, this.source, {
      logger: this.logger,
      ...(config.pool?.chunkBytes !== undefined ? { chunkSize: config.pool.chunkBytes } : {}),
    });
    this.db = await openDatabase({ url: config.storageUrl });
    try {
      this.instanceLock = this.lockSqliteDatabase();
    } catch (err) {
      await this.db.close();
      this.db = undefined;
      throw err;
    }
    const store = await AccountStore.open(this.db, {
      ...(this.deps.now ? { clock: this.deps.now } : {}),
      ...(config.rateLimit ? { rateLimit: config.rateLimit } : {}),
    });
    // This process now serves the database: take allotment in grants charged ahead.
    const reclaimed = await store.startServing();
    this.store = store;
    if (reclaimed > 0) {
      this.logger.warn(
        { bytes: reclaimed },
        'the previous server stopped without returning its held allotment; counted it as used',
      );
    }
    const source = this.source;
    this.app = await buildEntropyApp({
      pool: this.pool,
      accounts: accountsFromStore(store),
      sourceHealth: () => source.health(),
      ...(tls ? { tls } : {}),
      loggerInstance: this.logger,
      logRequests: config.logRequests ?? false,
      ...(this.deps.now ? { now: this.deps.now } : {}),
      processMetrics: true,
      ...(config.listen.maxConnections !== undefined ? { maxConnections: config.listen.maxConnections } : {}),
    });
    this.filler.start();
    await this.app.listen({
      host: config.listen.host,
      port: config.listen.port,
      // Fastify cannot see that our server factory made an HTTPS server; say it right.
      listenTextResolver: (address) => `entropy API bound to ${tls ? address.replace(/^http:/, 'https:') : address}`,
    });
    const bound = this.app.server.address();
    const port = typeof bound === 'object' && bound ? bound.port : config.listen.port;
    const hostForUrl = isIP(config.listen.host) === 6 ? `[${config.listen.host}]` : config.listen.host;
    this.address = { host: config.listen.host, port, url: `${tls ? 'https' : 'http'}://${hostForUrl}:${port}` };
    this.logger.info(
      { url: this.address.url, source: source.name, tls: tls ? (tls.minVersion ?? 'TLSv1.3') : 'off', poolCapacity: capacity },
      'entropy service listening',
    );
  }

  async stop(): Promise<void> {
    // Stop accepting, let in-flight requests finish, then stop filling and release.
    const started = Date.now();
    await this.app?.close();
    // A device read cannot be cancelled once it is on the thread pool (a silent /dev/hwrng
    // may block for long): give the filler and the source a moment, then move on.
    await withDeadline(this.filler?.stop(), 1_000);
    this.pool?.clear();
    await withDeadline(this.source?.close(), 1_000);
    // Record what was served and return the unserved held allotment before closing.
    await this.store?.stopServing();
    this.store = undefined;
    await this.db?.close();
    this.instanceLock?.release();
    this.app = undefined;
    this.db = undefined;
    this.instanceLock = undefined;
    const shared = this.context.shared;
    if (shared && shared.entropyPool === this.pool) delete shared.entropyPool;
    this.logger.info({ ms: Date.now() - started }, 'entropy service stopped');
  }

  async reload(): Promise<void> {
    // Certificates are read at start; a reload re-reads them for new connections.
    const tls = await this.loadTls();
    if (tls && useNewCertificate(this.app?.server, tls)) this.logger.info('TLS certificate and key reloaded');
  }

  /**
   * On SQLite this process keeps the rate-limit windows in memory, which is exact only if no
   * other process serves entropy from the same file: take the database's entropy lock (a
   * second daemon then refuses to start and says why). PostgreSQL shares the windows.
   */
  private lockSqliteDatabase(): InstanceLock | undefined {
    const storage = parseStorageUrl(this.config.storageUrl);
    if (storage.engine !== 'sqlite' || storage.file === ':memory:') return undefined;
    return InstanceLock.acquire(path.resolve(storage.file), 'entropy');
  }

  private loadTls(): Promise<ServingTls | undefined> {
    return loadServingTls('entropy', this.config);
  }

  private async upstreamOptions(upstream: NonNullable<EntropyRoleConfig['upstream']>) {
    if (upstream.allowInsecureHttp && isInsecureRemoteHttp(upstream.url)) this.logger.warn(insecureHttpWarning('entropy.upstream', upstream.url));
    let token = upstream.token;
    if (upstream.tokenFile) token = (await readPrivateFile('entropy.upstream.tokenFile: token file', upstream.tokenFile)).toString('utf8').trim();
    if (!token) throw new Error('entropy.upstream: token or tokenFile is required');
    const ca = upstream.caFile ? await fs.readFile(upstream.caFile) : undefined;
    return {
      url: upstream.url,
      token,
      ...(ca ? { ca } : {}),
      ...(upstream.blocksPerRequest ? { blocksPerRequest: upstream.blocksPerRequest } : {}),
      ...(upstream.tlsGroups ? { tlsGroups: upstream.tlsGroups } : {}),
      tlsLog: this.logger,
    };
  }
}

/** Waits for `work`, but no longer than `ms`. */
async function withDeadline(work: Promise<void> | undefined, ms: number): Promise<void> {
  if (!work) return;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([work.catch(() => undefined), deadline]);
  clearTimeout(timer);
}
