// Response bodies of the entropy routes, recycled (src/recycled-buffers.ts says why). A
// body goes back to the free list once the response has been handed to the kernel,
// zeroed first so that served entropy does not linger in the process.
import type { ServerResponse } from 'node:http';

import { RecycledBuffers } from '../recycled-buffers.js';

export class BodyBuffers {
  private readonly buffers: RecycledBuffers;

  /** @param maxFreeBytes bodies kept for reuse, in bytes over all lengths (default 32 MiB). */
  constructor(maxFreeBytes = 32 * 1024 * 1024) {
    this.buffers = new RecycledBuffers(maxFreeBytes);
  }

  /**
   * A buffer of exactly `length` bytes (contents unspecified) that goes back to the free
   * list when `response` has been sent; the caller must fill all of it.
   */
  acquireFor(response: ServerResponse, length: number): Buffer {
    const body = this.buffers.acquire(length);
    // 'finish': the last byte went to the kernel, so the buffer is ours again. A response
    // closed before that may still have a write of it pending: zeroed, never reused.
    response.once('finish', () => this.buffers.release(body));
    response.once('close', () => {
      if (!response.writableFinished) body.fill(0);
    });
    return body;
  }

  /** Bytes held for reuse (for tests and metrics). */
  get heldBytes(): number {
    return this.buffers.heldBytes;
  }
}
