// Where a quality run's bits come from: the local pool's quality tap (bytes taken there are
// never served to a client), a pool of our own filled from a local source, or a remote
// entropy API through the client, so a customer can audit a provider from outside.
import { EntropyClient, MAX_BLOCKS, type EntropyClientOptions } from '../client/index.js';
import { EntropyPool, PoolFiller, type FillerLogger } from '../pool/index.js';
import type { EntropySource } from '../sources/index.js';

export interface QualityBitSource {
  /** Shown in records and logs, e.g. "pool", "entropy-api https://host". */
  readonly name: string;
  /** Exactly `bytes` fresh bytes the caller owns; rejects when the source fails or `signal` aborts. */
  draw(bytes: number, signal: AbortSignal): Promise<Buffer>;
  /**
   * Why the latest attempt failed while a draw keeps retrying (undefined after a success),
   * so a draw that times out can say what it was waiting on (e.g. connection refused).
   */
  readonly lastFailure?: string | undefined;
  close(): Promise<void>;
}

/** The quality tap of a pool another component fills (the entropy role's, in one daemon). */
export class PoolTapSource implements QualityBitSource {
  readonly name: string;

  constructor(
    private readonly pool: EntropyPool | (() => EntropyPool | undefined),
    /** Bytes left in the pool for clients while drawing (default: the pool's low-water mark). */
    private readonly reserve?: number,
    name = 'pool',
  ) {
    this.name = name;
  }

  async draw(bytes: number, signal: AbortSignal): Promise<Buffer> {
    const pool = typeof this.pool === 'function' ? this.pool() : this.pool;
    if (!pool) throw new Error('the entropy pool is not running');
    return pool.drawForQuality(bytes, { signal, ...(this.reserve !== undefined ? { reserve: this.reserve } : {}) });
  }

  async close(): Promise<void> {}
}

/** A pool of our own, filled from a local source, for a quality role without an entropy role beside it. */
export class OwnPoolSource implements QualityBitSource {
  readonly name: string;
  private readonly pool: EntropyPool;
  private readonly filler: PoolFiller;
  private started = false;

  constructor(
    private readonly source: EntropySource,
    options: { capacity?: number; logger?: FillerLogger } = {},
  ) {
    this.name = `pool (${source.name})`;
    this.pool = new EntropyPool({ capacity: options.capacity ?? 4 * 1024 * 1024 });
    this.filler = new PoolFiller(this.pool, source, options.logger ? { logger: options.logger } : {});
  }

  async draw(bytes: number, signal: AbortSignal): Promise<Buffer> {
    if (!this.started) {
      this.filler.start();
      this.started = true;
    }
    // Nobody else takes from this pool: no reserve to keep. A source taken out of service
    // stops the filler; the draw then waits until the run's draw timeout records an error.
    const health = this.source.health();
    if (health.state === 'failed') throw new Error(`source ${this.source.name} is out of service: ${health.message ?? ''}`);
    return this.pool.drawForQuality(bytes, { signal, reserve: 0 });
  }

  async close(): Promise<void> {
    await this.filler.stop();
    this.pool.clear();
    await this.source.close();
  }
}

/** A remote entropy API of the spec's shape, through the client and its retry policy. */
export class EntropyApiSource implements QualityBitSource {
  readonly name: string;
  lastFailure: string | undefined;
  private readonly client: EntropyClient;
  private readonly blocksPerRequest: number;

  constructor(options: EntropyClientOptions & { blocksPerRequest?: number }) {
    const onRetry = options.onRetry;
    this.client = new EntropyClient({
      ...options,
      onRetry: (info) => {
        this.lastFailure = info.error.message;
        onRetry?.(info);
      },
    });
    this.blocksPerRequest = Math.min(Math.max(options.blocksPerRequest ?? MAX_BLOCKS, 1), MAX_BLOCKS);
    this.name = `entropy-api ${new URL(options.url).origin}`;
  }

  async draw(bytes: number, signal: AbortSignal): Promise<Buffer> {
    const out = Buffer.allocUnsafeSlow(bytes);
    let filled = 0;
    try {
      while (filled < bytes) {
        signal.throwIfAborted();
        const blocks = Math.min(this.blocksPerRequest, Math.ceil((bytes - filled) / 1024));
        const data = await this.client.fetch(blocks, { signal });
        this.lastFailure = undefined;
        const count = Math.min(data.length, bytes - filled);
        data.copy(out, filled, 0, count);
        data.fill(0);
        filled += count;
      }
      return out;
    } catch (err) {
      out.fill(0);
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
