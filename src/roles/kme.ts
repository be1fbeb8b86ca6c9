// The `kme` role of `qentropy daemon`: one site of a key distribution cluster (docs/kme.md).
// Seeds for new keys come from the daemon's entropy pool (seedSource 'pool', the entropy
// role must run in the same daemon), from an entropy API ('entropy-api') or from the OS
// CSPRNG ('system', for development).
import fs from 'node:fs/promises';

import type { Logger } from 'pino';

import { EntropyClient } from '../client/index.js';
import { insecureHttpWarning, isInsecureRemoteHttp } from '../config/insecure-http.js';
import { readPrivateFile } from '../config/private-file.js';
import type { KmeConfig } from '../config/sections/kme.js';
import { KmeSite } from '../kme/site.js';
import { clientSeedSource, poolSeedSource, systemSeedSource, type SeedSource } from '../kme/seed-source.js';
import type { EntropyPool } from '../pool/index.js';
import type { Role, RoleContext } from './types.js';

export interface KmeRoleConfig extends KmeConfig {
  /** The daemon's storage URL, used when the section names none. */
  storageUrl?: string;
}

export interface KmeRoleDeps {
  /** The entropy role's pool (seedSource 'pool'); looked up when the role starts. */
  pool?: () => EntropyPool | undefined;
  /** Overrides the configured source (tests). */
  seedSource?: SeedSource;
}

export class KmeRole implements Role {
  readonly name = 'kme';
  private site: KmeSite | undefined;
  private client: EntropyClient | undefined;
  private readonly logger: Logger;
  /** The base URL actually bound (port 0 picks a free port). */
  url: string | undefined;

  constructor(
    private readonly config: KmeRoleConfig,
    context: RoleContext,
    private readonly deps: KmeRoleDeps = {},
  ) {
    this.logger = context.logger.child({ role: 'kme', kme: config.id });
  }

  private async seedSource(): Promise<SeedSource> {
    if (this.deps.seedSource) return this.deps.seedSource;
    switch (this.config.seedSource) {
      case 'system':
        return systemSeedSource();
      case 'pool': {
        const pool = this.deps.pool?.();
        if (!pool) throw new Error("kme.seedSource: 'pool' needs the entropy role enabled in the same daemon (or use 'entropy-api')");
        return poolSeedSource(pool);
      }
      case 'entropy-api': {
        const api = this.config.entropyApi!;
        if (api.allowInsecureHttp && isInsecureRemoteHttp(api.url)) {
          this.logger.warn(`${insecureHttpWarning('kme.entropyApi', api.url)}; whoever can read that path can compute every key unless the ratchet or a PSK is on`);
        }
        const token = (await readPrivateFile('kme.entropyApi.tokenFile: token file', api.tokenFile)).toString('utf8').trim();
        this.client = new EntropyClient({ url: api.url, token, ...(api.caFile ? { ca: await fs.readFile(api.caFile) } : {}) });
        return clientSeedSource(this.client);
      }
    }
  }

  async start(): Promise<void> {
    const storage = this.config.storage ?? this.config.storageUrl;
    const site = await KmeSite.create(
      { ...this.config, ...(storage ? { storage } : {}) },
      { seedSource: await this.seedSource(), logger: this.logger },
    );
    try {
      this.url = await site.start();
    } catch (err) {
      await site.stop().catch(() => undefined);
      throw err;
    }
    this.site = site;
  }

  /** SIGHUP: re-read the certificate, key and CA (renewed with `qentropy pki issue`). */
  async reload(): Promise<void> {
    if (!this.site) return;
    try {
      await this.site.reloadTls();
      this.logger.info('kme: TLS certificate, key and CA reloaded');
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'kme: reload failed; the site keeps its current certificates');
    }
  }

  async stop(): Promise<void> {
    await this.site?.stop();
    this.site = undefined;
    await this.client?.close();
    this.client = undefined;
  }
}
