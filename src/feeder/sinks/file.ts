// The file sink: appends bytes to a file (or a named pipe) for testing and for consumers
// other than the kernel and HSMs. Each feed is one write(2) of the whole chunk: it lands
// completely or, after a short write (disk full), the file is cut back to where it was,
// so a reader never sees half a chunk. A stop waits for the write in flight.
import fs from 'node:fs/promises';

import { SinkError, type FeedOutcome, type Sink } from './types.js';

export interface FileSinkOptions {
  path: string;
  bytes: number;
  intervalMs: number;
}

export class FileSink implements Sink {
  readonly kind = 'file' as const;
  readonly name: string;
  readonly intervalMs: number;
  private handle: fs.FileHandle | undefined;
  private regular = false;
  private size = 0;

  constructor(private readonly options: FileSinkOptions) {
    this.name = `file:${options.path}`;
    this.intervalMs = options.intervalMs;
  }

  async open(): Promise<void> {
    try {
      // Created 0600: these bytes seed other generators.
      this.handle = await fs.open(this.options.path, 'a', 0o600);
      const stat = await this.handle.stat();
      this.regular = stat.isFile();
      this.size = stat.size;
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new SinkError(`cannot open ${this.options.path}: ${e.message}`, e.code ?? 'ERROR', e.code === 'EACCES' || e.code === 'ENOENT');
    }
  }

  wants(): number {
    return this.options.bytes;
  }

  async feed(bytes: Buffer): Promise<FeedOutcome> {
    const handle = this.handle;
    if (!handle) throw new SinkError(`${this.name} is not open`, 'ECLOSED');
    let written = 0;
    try {
      ({ bytesWritten: written } = await handle.write(bytes, 0, bytes.length));
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new SinkError(`write to ${this.options.path} failed: ${e.message}`, e.code ?? 'ERROR');
    }
    if (written !== bytes.length) {
      if (this.regular) await handle.truncate(this.size).catch(() => undefined);
      throw new SinkError(`short write to ${this.options.path} (${written} of ${bytes.length} bytes); cut back`, 'ESHORT');
    }
    this.size += written;
    return { bytes: written };
  }

  async details(): Promise<Record<string, unknown>> {
    return { path: this.options.path };
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }
}
