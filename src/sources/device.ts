// `device:PATH` and `hwrng`: raw bytes from a character device (a QRNG card's own device,
// or /dev/hwrng where the kernel exposes hardware RNGs). Reads go through a FileHandle,
// which runs on the libuv thread pool, so a slow device never blocks the event loop.
// The bytes are raw noise-source output: createSource wraps this in the health gate.
// Only a character device is accepted (a FIFO too: a vendor's daemon may write its QRNG's
// output into one, and the tests and benchmarks use one to play a device): a regular file
// would give the same bytes again after every restart, and a quality role reading the same
// path would publish what the entropy role serves.
import { statSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

import { addon } from '../native/addon.js';
import type { RawSource } from './health-gate.js';

/**
 * A FIFO's pipe is grown to this on open (best effort: 1 MiB is also the kernel's default
 * limit for unprivileged processes). At its default 64 KiB every read returned at most
 * that, and each waited on the writer being woken to refill it: 197-217 MB/s through the
 * gate from a generator that writes GB/s (benchmarks/README.md).
 */
export const FIFO_PIPE_BYTES = 1024 * 1024;

const native = addon as { pipeGrow(fd: number, bytes: number): number };

export interface DeviceSourceOptions {
  /** See EntropySource.preferredReadBytes. */
  preferredReadBytes?: number;
}

export class DeviceSource implements RawSource {
  readonly development = false;
  readonly preferredReadBytes: number | undefined;
  private handle: Promise<FileHandle> | undefined;

  /** Throws when `path` exists and is not a character device (a missing one may appear later: reads retry). */
  constructor(
    readonly name: string,
    readonly path: string,
    options: DeviceSourceOptions = {},
  ) {
    this.preferredReadBytes = options.preferredReadBytes;
    let st: Stats | undefined;
    try {
      st = statSync(path);
    } catch {
      st = undefined;
    }
    if (st) assertDevice(path, st);
  }

  async read(n: number): Promise<Buffer> {
    this.handle ??= openDevice(this.path);
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

/** Opens `path` for reading and checks what was opened (the path may have been replaced since start). */
async function openDevice(path: string): Promise<FileHandle> {
  const handle = await open(path, 'r');
  try {
    const st = await handle.stat();
    assertDevice(path, st);
    if (st.isFIFO()) native.pipeGrow(handle.fd, FIFO_PIPE_BYTES); // refused: it stays as it was
  } catch (err) {
    await handle.close();
    throw err;
  }
  return handle;
}

function assertDevice(path: string, st: Stats): void {
  if (st.isCharacterDevice() || st.isFIFO()) return;
  const kind = st.isFile() ? 'a regular file' : st.isDirectory() ? 'a directory' : st.isBlockDevice() ? 'a block device' : 'not a device';
  throw new Error(
    `device:${path} is ${kind}, not a character device: name the source's device (e.g. /dev/qrandom0); ` +
      'a file would serve the same bytes again after every restart',
  );
}
