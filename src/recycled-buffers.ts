// Large buffers of recurring lengths, recycled: the entropy server's response bodies and
// the entropy client's received bodies (a size=512 body is ~700 KB). Allocating a fresh
// one each time made the kernel fault in and zero ~170 new pages, and drove V8 into a
// major GC every few dozen responses (each new ArrayBuffer counts as external memory,
// growing by hundreds of MB/s at full load); both cost more than the work on the body.
// A buffer comes back zeroed, so the entropy it held does not linger in the process.

export class RecycledBuffers {
  private readonly free = new Map<number, Buffer[]>();
  private freeBytes = 0;

  /** @param maxFreeBytes buffers kept for reuse, in bytes over all lengths. */
  constructor(private readonly maxFreeBytes: number) {}

  /** A buffer of exactly `length` bytes, contents unspecified (the caller fills all of it). */
  acquire(length: number): Buffer {
    const reused = this.free.get(length)?.pop();
    if (reused) this.freeBytes -= length;
    return reused ?? Buffer.allocUnsafeSlow(length);
  }

  /** Zeroes `buffer` and keeps it for a later acquire() while there is room. */
  release(buffer: Buffer): void {
    buffer.fill(0);
    if (this.freeBytes + buffer.length > this.maxFreeBytes) return;
    const list = this.free.get(buffer.length);
    if (list) list.push(buffer);
    else this.free.set(buffer.length, [buffer]);
    this.freeBytes += buffer.length;
  }

  /** Bytes held for reuse (for tests and metrics). */
  get heldBytes(): number {
    return this.freeBytes;
  }
}
