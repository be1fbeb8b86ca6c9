// The feeder's buffer: a fixed ring of bytes that passed the health tests, waiting for a
// sink. Bytes are TAKEN out (copied to the caller and zeroed in the ring), so each byte
// reaches one sink once. The ring is allocated once, outside Node's buffer pool, and locked
// in memory when the system allows (see memlock.ts). JavaScript runs one callback at a
// time, so put/take need no locks.
import { lockMemory, unlockMemory, type LockResult } from './memlock.js';

export interface FeedBufferOptions {
  capacity: number;
  /** The puller is woken when the level drops below this (default capacity / 2). */
  lowWater?: number;
  /** Try to mlock the ring (default true). */
  lockMemory?: boolean;
}

export class FeedBuffer {
  readonly capacity: number;
  readonly lowWater: number;
  readonly lock: LockResult;
  private readonly ring: Buffer;
  private head = 0; // next byte to take
  private levelBytes = 0;
  private listeners = new Set<() => void>();
  private released = false;

  constructor(options: FeedBufferOptions) {
    if (!Number.isSafeInteger(options.capacity) || options.capacity < 1024) {
      throw new RangeError('buffer capacity must be an integer of at least 1024 bytes');
    }
    this.capacity = options.capacity;
    this.lowWater = options.lowWater ?? Math.floor(options.capacity / 2);
    this.ring = Buffer.allocUnsafeSlow(this.capacity).fill(0);
    this.lock = options.lockMemory === false ? { locked: false, reason: 'disabled in config' } : lockMemory(this.ring);
  }

  get level(): number {
    return this.levelBytes;
  }

  get room(): number {
    return this.capacity - this.levelBytes;
  }

  /** Copies `data` in (as much as fits) and returns how many bytes were taken. The caller zeroes its copy. */
  put(data: Uint8Array): number {
    if (this.released) return 0;
    const n = Math.min(data.length, this.room);
    let tail = (this.head + this.levelBytes) % this.capacity;
    let done = 0;
    while (done < n) {
      const count = Math.min(n - done, this.capacity - tail);
      this.ring.set(data.subarray(done, done + count), tail);
      done += count;
      tail = (tail + count) % this.capacity;
    }
    this.levelBytes += n;
    if (n > 0) this.notify();
    return n;
  }

  /**
   * Up to `max` bytes (fewer when the level is lower; an empty Buffer when empty), removed
   * from the ring and zeroed there. The caller owns the result and zeroes it after use.
   */
  take(max: number): Buffer {
    const n = Math.min(max, this.levelBytes);
    const out = Buffer.allocUnsafeSlow(n);
    let done = 0;
    while (done < n) {
      const count = Math.min(n - done, this.capacity - this.head);
      this.ring.copy(out, done, this.head, this.head + count);
      this.ring.fill(0, this.head, this.head + count);
      done += count;
      this.head = (this.head + count) % this.capacity;
    }
    this.levelBytes -= n;
    if (this.levelBytes === 0) this.head = 0;
    if (n > 0) this.notify();
    return out;
  }

  /** Resolves when the level or room changes (a put or a take), or when `signal` aborts. */
  changed(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = (): void => {
        this.listeners.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.listeners.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Zeroes everything held. */
  clear(): void {
    this.ring.fill(0);
    this.head = 0;
    this.levelBytes = 0;
    this.notify();
  }

  /** Zeroes and unlocks the ring; the buffer takes nothing afterwards. */
  release(): void {
    if (this.released) return;
    this.clear();
    if (this.lock.locked) unlockMemory(this.ring);
    this.released = true;
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
