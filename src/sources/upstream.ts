// `upstream`: another entropy API of this shape (a regional relay of the provider, or
// another qentropy instance), read with the client and its retry policy; the client
// validates every block. createSource puts it behind the health gate like a device: the
// upstream's own tests are not ours to trust, and a relay serving a counter or a replayed
// buffer must not reach our clients (issue 14 item 17).
import { EntropyClient, EntropyClientError, type EntropyClientOptions } from '../client/index.js';
import { BasicHealth, SourceOutOfServiceError, type EntropySource, type SourceHealth } from './types.js';

export interface UpstreamOptions extends EntropyClientOptions {
  /** Blocks per upstream request (1..512, default 64). */
  blocksPerRequest?: number;
}

export class UpstreamSource implements EntropySource {
  readonly name = 'upstream';
  readonly development = false;
  private readonly client: EntropyClient;
  private readonly blocksPerRequest: number;
  private readonly status = new BasicHealth(this.name, false);

  constructor(options: UpstreamOptions) {
    this.blocksPerRequest = options.blocksPerRequest ?? 64;
    this.client = new EntropyClient({
      ...options,
      onRetry: ({ error, delayMs }) => {
        this.status.readErrors += 1;
        this.status.state = 'degraded';
        this.status.message = `${error.message}; retrying in ${Math.round(delayMs / 1000)} s`;
        options.onRetry?.({ error, delayMs, attempt: 0 });
      },
    });
  }

  async read(n: number, signal?: AbortSignal): Promise<Buffer> {
    const blocks = Math.max(1, Math.min(this.blocksPerRequest, Math.floor(n / 1024)));
    try {
      const data = await this.client.fetch(blocks, signal ? { signal } : {});
      this.status.state = 'ok';
      this.status.message = undefined;
      this.status.blocksPassed += blocks;
      return data;
    } catch (err) {
      if (err instanceof EntropyClientError && err.errorClass !== 'transient') {
        // 400/401 (or 403 without waiting): nothing will change until the config does.
        this.status.state = 'failed';
        this.status.message = `upstream refused: ${err.message}`;
        throw new SourceOutOfServiceError(this.status.message);
      }
      throw err;
    }
  }

  health(): SourceHealth {
    return this.status.snapshot();
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
