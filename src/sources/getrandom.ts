// `getrandom`: the operating system's CSPRNG (crypto.randomFill, which is getrandom(2) on
// Linux). For development and tests only: it is not a quantum source, and the service
// says so in its start-up log and in /healthz.
import { randomFill } from 'node:crypto';

import { BasicHealth, type EntropySource, type SourceHealth } from './types.js';

export class GetrandomSource implements EntropySource {
  readonly name = 'getrandom';
  readonly development = true;
  /** A 4 MiB randomFill takes ~3 ms on the thread pool. */
  readonly preferredReadBytes = 4 * 1024 * 1024;
  private readonly status = new BasicHealth(this.name, true);

  constructor() {
    this.status.message = 'development source: the OS CSPRNG, not a quantum source';
  }

  read(n: number): Promise<Buffer> {
    // randomFill runs on the libuv thread pool, so large reads never block the event loop.
    return new Promise((resolve, reject) => {
      randomFill(Buffer.allocUnsafeSlow(n), (err, buf) => {
        if (err) {
          this.status.readErrors += 1;
          reject(err);
          return;
        }
        this.status.blocksPassed += Math.ceil(n / 1024);
        resolve(buf);
      });
    });
  }

  health(): SourceHealth {
    return this.status.snapshot();
  }

  async close(): Promise<void> {}
}
