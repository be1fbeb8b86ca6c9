// The `feeder` role of `qentropy daemon`: pulls entropy from the configured APIs, tests
// every block and seeds the kernel pool and HSMs (docs/feeder.md). SIGHUP re-reads the
// config file and rebuilds sources and sinks (the buffer and what it holds are kept);
// SIGTERM finishes feeds in flight, zeroes the buffer and closes every session.
import type { Logger } from 'pino';

import { loadConfig } from '../config/index.js';
import type { FeederConfig } from '../config/sections/feeder.js';
import { buildFeeder, FeedBuffer, type Feeder, FeederLedger, writeStatusFile } from '../feeder/index.js';
import type { FeederSourceOptions } from '../feeder/source.js';
import { answerClientError, createListener } from '../listener/index.js';
import { withTlsMetrics } from '../pqtls/index.js';
import type { Role, RoleContext } from './types.js';

/** Scrapers and operators only: a handful of connections is plenty. */
export const FEEDER_STATUS_MAX_CONNECTIONS = 32;

export interface FeederRoleDeps {
  /** The config file to re-read on reload (default: the one the daemon started with). */
  configFile?: string;
  /** Client retry tuning (tests). */
  retry?: FeederSourceOptions['retry'];
  reopenAfterMs?: number;
}

export class FeederRole implements Role {
  readonly name = 'feeder';
  private readonly logger: Logger;
  private buffer: FeedBuffer | undefined;
  private statusTimer: NodeJS.Timeout | undefined;
  private server: ReturnType<typeof createListener> | undefined;
  private statusWrite: Promise<void> = Promise.resolve();
  /** Counters and uptime of the process: a reload must not look like a restart to monitoring. */
  private readonly ledger = new FeederLedger();
  feeder: Feeder | undefined;
  /** Address of the status listener (port 0 in config picks a free port). */
  address: { host: string; port: number; url: string } | undefined;

  constructor(
    private config: FeederConfig,
    context: RoleContext,
    private readonly deps: FeederRoleDeps = {},
  ) {
    this.logger = context.logger.child({ role: 'feeder' });
  }

  async start(): Promise<void> {
    const { config } = this;
    this.buffer = new FeedBuffer({ capacity: config.buffer.capacityBytes, lowWater: config.buffer.lowWaterBytes, lockMemory: config.buffer.lockMemory });
    try {
      this.feeder = await this.build(config, this.buffer);
      if (config.status.listen) await this.listen(config.status.listen);
      await this.feeder.start();
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.statusTimer = setInterval(() => this.writeStatus(), config.status.intervalMs);
    this.statusTimer.unref();
    this.writeStatus();
  }

  async stop(): Promise<void> {
    if (this.statusTimer) clearInterval(this.statusTimer);
    this.statusTimer = undefined;
    const feeder = this.feeder;
    await feeder?.stop();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
    this.server = undefined;
    if (feeder) {
      this.writeStatus();
      await this.statusWrite;
    }
    this.feeder = undefined;
    this.buffer?.release();
    this.buffer = undefined;
  }

  /** Re-reads the config file; on any problem the running feeder is kept and the problem logged. */
  async reload(): Promise<void> {
    let next: FeederConfig;
    try {
      next = loadConfig(this.deps.configFile !== undefined ? { file: this.deps.configFile } : {}).feeder;
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'reload: config rejected; the feeder keeps running as it was');
      return;
    }
    if (!next.enabled) {
      this.logger.warn('reload: feeder.enabled is now false; a restart stops the role (it keeps running until then)');
      return;
    }
    if (next.buffer.capacityBytes !== this.config.buffer.capacityBytes) {
      this.logger.warn('reload: feeder.buffer changes need a restart; keeping the current buffer');
    }
    let feeder: Feeder;
    try {
      feeder = await this.build(next, this.buffer!);
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'reload failed; the feeder keeps running as it was');
      return;
    }
    await this.feeder?.stop();
    this.feeder = feeder;
    this.config = { ...next, buffer: this.config.buffer, status: { ...next.status, listen: this.config.status.listen } };
    await feeder.start();
    this.logger.info('feeder reloaded');
    this.writeStatus();
  }

  private build(config: FeederConfig, buffer: FeedBuffer): Promise<Feeder> {
    return buildFeeder(config, {
      logger: this.logger,
      buffer,
      ledger: this.ledger,
      ...(this.deps.retry ? { retry: this.deps.retry } : {}),
      ...(this.deps.reopenAfterMs !== undefined ? { reopenAfterMs: this.deps.reopenAfterMs } : {}),
    });
  }

  private writeStatus(): void {
    const feeder = this.feeder;
    if (!feeder) return;
    const file = this.config.status.file;
    this.statusWrite = this.statusWrite
      .then(async () => writeStatusFile(file, await feeder.status()))
      .catch((err: Error) => this.logger.warn({ file, err: err.message }, 'cannot write the feeder status file'));
  }

  /**
   * /metrics (Prometheus), /status (JSON) and /healthz on a local address, with the
   * listeners' shared timeouts and a small connection cap (it serves scrapers, not clients).
   */
  private async listen(listen: { host: string; port: number }): Promise<void> {
    const server = createListener((req, res) => {
      const feeder = this.feeder;
      const url = (req.url ?? '/').split('?', 1)[0];
      const send = (code: number, type: string, body: string): void => {
        res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
      };
      if (req.method !== 'GET' || !feeder) return send(req.method !== 'GET' ? 405 : 503, 'application/json', JSON.stringify({ message: req.method !== 'GET' ? 'method not allowed' : 'feeder not running', details: [] }));
      if (url === '/metrics') {
        // The process's TLS handshake counters ride along (the sources' groups; docs/post-quantum.md).
        const registry = withTlsMetrics(feeder.registry);
        void registry.metrics().then((text) => send(200, registry.contentType, text));
      } else if (url === '/status') {
        void feeder.status().then((s) => send(200, 'application/json', JSON.stringify(s)));
      } else if (url === '/healthz') {
        const s = feeder.statusNow();
        const ok = s.sinks.some((k) => k.state === 'ok' || k.state === 'idle') || s.buffer.level > 0;
        send(ok ? 200 : 503, 'application/json', JSON.stringify({ status: ok ? 'ok' : 'degraded' }));
      } else {
        send(404, 'application/json', JSON.stringify({ message: `no such path: ${url}`, details: [] }));
      }
    }, undefined, { maxConnections: FEEDER_STATUS_MAX_CONNECTIONS });
    server.on('clientError', (error: Error, socket) => answerClientError(error, socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => reject(new Error(`feeder.status.listen: cannot listen on ${listen.host}:${listen.port}: ${err.message}`)));
      server.listen(listen.port, listen.host, () => resolve());
    });
    this.server = server;
    const bound = server.address();
    const port = typeof bound === 'object' && bound ? bound.port : listen.port;
    this.address = { host: listen.host, port, url: `http://${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${port}` };
    this.logger.info({ url: this.address.url }, 'feeder status and /metrics listening');
  }
}
