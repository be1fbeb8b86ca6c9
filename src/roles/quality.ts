// The `quality` role of `qentropy daemon`: NIST STS every 10 minutes on bits from the pool's
// quality tap (or a remote entropy API), records in the shared storage, and the quality
// APIs on the role's own listener (docs/quality.md).
import fs from 'node:fs/promises';
import { isIP } from 'node:net';

import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';

import type { QualityConfig } from '../config/index.js';
import { insecureHttpWarning, isInsecureRemoteHttp } from '../config/insecure-http.js';
import { readPrivateFile } from '../config/private-file.js';
import type { EntropyPool } from '../pool/index.js';
import { buildQualityApp } from '../quality/api.js';
import { QualityService } from '../quality/service.js';
import { EntropyApiSource, OwnPoolSource, PoolTapSource, type QualityBitSource } from '../quality/sources.js';
import { QualityStore } from '../quality/store.js';
import { registerQualityPage } from '../quality-page/index.js';
import { createSource, parseSourceSpec, type BlockTester } from '../sources/index.js';
import { openDatabase, type Db } from '../storage/db.js';
import { loadServingTls, useNewCertificate, type ServingTls } from './tls-files.js';
import type { Role, RoleContext } from './types.js';

export interface QualityRoleConfig extends QualityConfig {
  /** sqlite:PATH or postgres://... (the daemon's storage.url). */
  storageUrl: string;
  /** The entropy role's source spec, used for a pool of our own when `localSource` is unset. */
  entropySource?: string;
}

export interface QualityRoleDeps {
  /** The entropy role's pool when it runs in the same daemon (its quality tap is used). */
  pool?: () => EntropyPool | undefined;
  /** SP 800-90B tester for raw local sources (hwrng, device, rdseed). */
  createTester?: (minEntropyPerByte: number) => BlockTester;
  /** Replaces the configured source (tests, benchmarks). */
  source?: QualityBitSource;
  now?: () => number;
}

export class QualityRole implements Role {
  readonly name = 'quality';
  private readonly logger: Logger;
  private db: Db | undefined;
  private source: QualityBitSource | undefined;
  private app: FastifyInstance | undefined;
  service: QualityService | undefined;
  address: { host: string; port: number; url: string } | undefined;

  constructor(
    private readonly config: QualityRoleConfig,
    context: RoleContext,
    private readonly deps: QualityRoleDeps = {},
  ) {
    this.logger = context.logger.child({ role: 'quality' });
  }

  async start(): Promise<void> {
    const { config } = this;
    const tls = await this.loadTls();
    this.source = this.deps.source ?? (await this.createBitSource());
    this.db = await openDatabase({ url: config.storageUrl });
    try {
      const store = await QualityStore.open(this.db);
      this.service = new QualityService({
        store,
        source: this.source,
        streams: config.streams,
        bitsPerStream: config.bitsPerStream,
        threads: config.threads,
        drawTimeoutMs: config.drawTimeoutSeconds * 1000,
        passingDataRetentionMs: config.passingDataRetentionDays * 86_400_000,
        intervalMs: config.intervalSeconds * 1000,
        firstDelayMs: config.firstRunDelaySeconds * 1000,
        retentionMs: config.retentionDays * 86_400_000,
        pruneIntervalMs: config.pruneIntervalSeconds * 1000,
        logger: this.logger,
        ...(this.deps.now ? { now: this.deps.now } : {}),
      });
      this.app = await buildQualityApp({
        store,
        ...(tls ? { tls } : {}),
        logger: { level: this.logger.level, base: { role: 'quality' } },
        logRequests: config.logRequests,
        ...(config.listen.maxConnections !== undefined ? { maxConnections: config.listen.maxConnections } : {}),
        intervalSeconds: config.intervalSeconds,
      });
      await registerQualityPage(this.app, {
        store,
        retentionDays: config.retentionDays,
        schedule: () => ({
          intervalSeconds: config.intervalSeconds,
          drawTimeoutSeconds: config.drawTimeoutSeconds,
          nextRunAt: this.service?.nextRunAt ?? null,
        }),
      });
      await this.app.listen({ host: config.listen.host, port: config.listen.port });
    } catch (err) {
      await this.stop();
      throw err;
    }
    const bound = this.app.server.address();
    const port = typeof bound === 'object' && bound ? bound.port : config.listen.port;
    const host = isIP(config.listen.host) === 6 ? `[${config.listen.host}]` : config.listen.host;
    this.address = { host: config.listen.host, port, url: `${tls ? 'https' : 'http'}://${host}:${port}` };
    this.service.start();
    this.logger.info(
      {
        url: this.address.url,
        source: this.source.name,
        streams: config.streams,
        bitsPerStream: config.bitsPerStream,
        intervalSeconds: config.intervalSeconds,
      },
      'quality service listening',
    );
  }

  async stop(): Promise<void> {
    await this.app?.close();
    await this.service?.stop();
    if (!this.deps.source) await this.source?.close();
    await this.db?.close();
    this.app = undefined;
    this.service = undefined;
    this.db = undefined;
  }

  async reload(): Promise<void> {
    // Certificates are read at start; a reload re-reads them for new connections.
    const tls = await this.loadTls();
    if (tls && useNewCertificate(this.app?.server, tls)) this.logger.info('TLS certificate and key reloaded');
  }

  private async createBitSource(): Promise<QualityBitSource> {
    const { config } = this;
    if (config.source === 'entropy-api') {
      const api = config.entropyApi;
      if (!api) throw new Error('quality.entropyApi: url and tokenFile are required when quality.source is "entropy-api"');
      if (api.allowInsecureHttp && isInsecureRemoteHttp(api.url)) this.logger.warn(insecureHttpWarning('quality.entropyApi', api.url));
      let token = api.token;
      if (api.tokenFile) token = (await readPrivateFile('quality.entropyApi.tokenFile: token file', api.tokenFile)).toString('utf8').trim();
      if (!token) throw new Error('quality.entropyApi: token or tokenFile is required');
      const ca = api.caFile ? await fs.readFile(api.caFile) : undefined;
      return new EntropyApiSource({
        url: api.url,
        token,
        blocksPerRequest: api.blocksPerRequest,
        ...(ca ? { ca } : {}),
        ...(api.tlsGroups ? { tlsGroups: api.tlsGroups } : {}),
        tlsLog: this.logger,
        onRetry: ({ error, delayMs }) => this.logger.warn({ err: error.message, delayMs }, 'entropy API request failed; retrying'),
      });
    }
    // Named as `qentropy quality run` names its own pool, "pool (getrandom)": one wording
    // for where a run's bits came from, whichever process drew them.
    if (this.deps.pool && !config.localSource) return new PoolTapSource(this.deps.pool, undefined, `pool (${config.entropySource ?? 'entropy role'})`);
    const specText = config.localSource ?? config.entropySource ?? 'hwrng';
    const spec = parseSourceSpec(specText);
    if (spec.kind === 'upstream') {
      throw new Error('quality.source "pool" without an entropy role here needs quality.localSource (hwrng, device:PATH, rdseed or getrandom)');
    }
    const createTester = this.deps.createTester;
    const source = createSource(spec, createTester ? { createTester: () => createTester(7.5) } : {});
    if (source.development) this.logger.warn({ source: source.name }, 'DEVELOPMENT SOURCE: quality runs test the OS CSPRNG, not a quantum source');
    return new OwnPoolSource(source, { logger: this.logger });
  }

  private loadTls(): Promise<ServingTls | undefined> {
    return loadServingTls('quality', this.config);
  }
}
