// `device:PATH` and `hwrng`: raw bytes from a character device (a QRNG card's own device,
// or /dev/hwrng where the kernel exposes hardware RNGs). Reads go through a FileHandle,
// which runs on the libuv thread pool, so a slow device never blocks the event loop.
// The bytes are raw noise-source output: createSource wraps this in the health gate.
import { open, type FileHandle } from 'node:fs/promises';

import type { RawSource } from './health-gate.js';

export class DeviceSource implements RawSource {
  readonly development = false;
  private handle: Promise<FileHandle> | undefined;

  constructor(
    readonly name: string,
    readonly path: string,
  ) {}

  async read(n: number): Promise<Buffer> {
    this.handle ??= open(this.path, 'r');
    let handle: FileHandle;
    try {
      handle = await this.handle;
    } catch (err) {
      this.handle = undefined; // try to open again on the next read
      throw new Error(`cannot open ${this.path}: ${(err as Error).message}`);
    }
    const buf = Buffer.allocUnsafeSlow(n);
    const { bytesRead } = await handle.read(buf, 0, n, null);
    if (bytesRead === 0) {
      // A device never ends; a file that does has run out of data to give.
      buf.fill(0);
      throw new Error(`${this.path} returned end of file`);
    }
    return bytesRead === n ? buf : buf.subarray(0, bytesRead);
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    if (handle) await (await handle.catch(() => undefined))?.close();
  }
}
