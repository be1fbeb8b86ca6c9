// Response bodies of the entropy routes, recycled. A size=512 body is ~700 KB: allocating
// a fresh one per request made the kernel fault in and zero ~170 new pages each time and
// drove V8 into a major GC every few hundred requests (external memory grows by ~0.5 GB/s
// at full load); both cost more than encoding the body. A body goes back to the free list
// once the response has been handed to the kernel, zeroed first so that served entropy
// does not linger in the process.
import type { ServerResponse } from 'node:http';

export class BodyBuffers {
  private readonly free = new Map<number, Buffer[]>();
  private freeBytes = 0;

  /** @param maxFreeBytes bodies kept for reuse, in bytes over all lengths (default 32 MiB). */
  constructor(private readonly maxFreeBytes = 32 * 1024 * 1024) {}

  /**
   * A buffer of exactly `length` bytes (contents unspecified) that goes back to the free
   * list when `response` has been sent; the caller must fill all of it.
   */
  acquireFor(response: ServerResponse, length: number): Buffer {
    const reused = this.free.get(length)?.pop();
    if (reused) this.freeBytes -= length;
    const body = reused ?? Buffer.allocUnsafeSlow(length);
    // 'finish': the last byte went to the kernel, so the buffer is ours again. A response
    // closed before that may still have a write of it pending: zeroed, never reused.
    response.once('finish', () => this.release(body));
    response.once('close', () => {
      if (!response.writableFinished) body.fill(0);
    });
    return body;
  }

  /** Bytes held for reuse (for tests and metrics). */
  get heldBytes(): number {
    return this.freeBytes;
  }

  private release(body: Buffer): void {
    body.fill(0);
    if (this.freeBytes + body.length > this.maxFreeBytes) return;
    const list = this.free.get(body.length);
    if (list) list.push(body);
    else this.free.set(body.length, [body]);
    this.freeBytes += body.length;
  }
}
