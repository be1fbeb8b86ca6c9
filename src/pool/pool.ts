// The supply pool: a bounded buffer of entropy that a background filler tops up and that
// consumers TAKE bytes out of. Taking removes the bytes (the pool keeps no copy: it hands
// out a region it will never touch again, or a gathered copy after zeroing the source
// regions), so no byte ever reaches two consumers: not two clients, and
// not a client and the quality tests. JavaScript runs one callback at a time, so `take`
// is atomic without locks: it either removes exactly n bytes or leaves the pool as it was.

/** What the pool knows about itself, for /healthz and /metrics. */
export interface PoolStats {
  level: number;
  capacity: number;
  lowWater: number;
  bytesIn: number;
  bytesToClients: number;
  bytesToQuality: number;
  /** take() calls that found the pool short (each became a 503). */
  shortfalls: number;
}

export interface PoolOptions {
  /** Most bytes the pool holds. */
  capacity: number;
  /**
   * The filler is woken when the level drops below this (default capacity / 2). It is
   * also woken whenever a client request or a quality draw finds the pool short, whatever
   * the level: a request above the level but below the mark would otherwise wait forever.
   */
  lowWater?: number;
}

type Consumer = 'client' | 'quality';

export class EntropyPool {
  readonly capacity: number;
  readonly lowWater: number;
  // Chunks in arrival order; `head` is the read offset into chunks[0].
  private chunks: Buffer[] = [];
  private head = 0;
  private levelBytes = 0;
  private bytesIn = 0;
  private bytesToClients = 0;
  private bytesToQuality = 0;
  private shortfalls = 0;
  private refillListeners = new Set<() => void>();
  private levelListeners = new Set<() => void>();

  constructor(options: PoolOptions) {
    if (!Number.isSafeInteger(options.capacity) || options.capacity < 1024) {
      throw new RangeError('pool capacity must be an integer of at least 1024 bytes');
    }
    this.capacity = options.capacity;
    this.lowWater = options.lowWater ?? Math.floor(options.capacity / 2);
    if (!Number.isSafeInteger(this.lowWater) || this.lowWater < 0 || this.lowWater > this.capacity) {
      throw new RangeError('pool lowWater must be an integer between 0 and capacity');
    }
  }

  get level(): number {
    return this.levelBytes;
  }

  /** Free room, so the filler knows how much to read. */
  get room(): number {
    return this.capacity - this.levelBytes;
  }

  /**
   * Adds fresh bytes. The pool takes ownership of `data` (the caller must not reuse it).
   * Returns how many bytes were accepted; anything beyond capacity is zeroed and dropped.
   */
  put(data: Buffer): number {
    const accepted = Math.min(data.length, this.room);
    if (accepted <= 0) {
      data.fill(0);
      return 0;
    }
    if (accepted < data.length) data.fill(0, accepted);
    this.chunks.push(accepted === data.length ? data : data.subarray(0, accepted));
    this.levelBytes += accepted;
    this.bytesIn += accepted;
    for (const listener of this.levelListeners) listener();
    return accepted;
  }

  /** Exactly n bytes for a client, or null (and nothing removed) when the pool is short. */
  take(n: number): Buffer | null {
    return this.remove(n, 'client');
  }

  /**
   * Exactly n bytes for the quality tests, or null. Drawn from the same pool as client
   * requests, so bytes given here are never served to a client.
   */
  takeForQuality(n: number): Buffer | null {
    return this.remove(n, 'quality');
  }

  /**
   * Waits until n bytes for the quality tests have been gathered, taking them in pieces as
   * the pool fills, but never taking the pool below `reserve` bytes so clients keep being
   * served. Rejects when `signal` aborts (the bytes gathered so far are zeroed).
   */
  async drawForQuality(n: number, options: { reserve?: number; signal?: AbortSignal } = {}): Promise<Buffer> {
    const reserve = options.reserve ?? this.lowWater;
    const out = Buffer.allocUnsafeSlow(n);
    let filled = 0;
    try {
      while (filled < n) {
        options.signal?.throwIfAborted();
        const available = this.levelBytes - reserve;
        if (available > 0) {
          const piece = this.remove(Math.min(available, n - filled), 'quality');
          if (piece) {
            piece.copy(out, filled);
            filled += piece.length;
            piece.fill(0);
            continue;
          }
        }
        // Short: ask for a refill before waiting. The draw leaves the level AT the reserve
        // (the low-water mark by default), never below it, so no take would wake a filler
        // asleep on a full pool, and the draw would wait for a level that never comes.
        this.notifyRefillNeeded();
        await this.waitForLevel(reserve + 1, options.signal);
      }
      return out;
    } catch (err) {
      out.fill(0);
      throw err;
    }
  }

  /** Resolves once the level is at least `level` (or at capacity). */
  waitForLevel(level: number, signal?: AbortSignal): Promise<void> {
    const target = Math.min(level, this.capacity);
    if (this.levelBytes >= target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.levelListeners.delete(check);
        reject(signal?.reason ?? new Error('aborted'));
      };
      const check = (): void => {
        if (this.levelBytes < target) return;
        this.levelListeners.delete(check);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.levelListeners.add(check);
    });
  }

  /**
   * Called whenever the pool needs filling: a take left it below its low-water mark, a
   * client's take or a quality draw found it short (at any level), or it was cleared.
   */
  onRefillNeeded(listener: () => void): () => void {
    this.refillListeners.add(listener);
    return () => this.refillListeners.delete(listener);
  }

  stats(): PoolStats {
    return {
      level: this.levelBytes,
      capacity: this.capacity,
      lowWater: this.lowWater,
      bytesIn: this.bytesIn,
      bytesToClients: this.bytesToClients,
      bytesToQuality: this.bytesToQuality,
      shortfalls: this.shortfalls,
    };
  }

  /** Zeroes and drops everything held (on shutdown, or when the source is found bad). */
  clear(): void {
    // Only what is still held: regions already handed out belong to their takers.
    this.chunks.forEach((chunk, i) => chunk.fill(0, i === 0 ? this.head : 0));
    this.chunks = [];
    this.head = 0;
    this.levelBytes = 0;
    this.notifyRefillNeeded();
  }

  private remove(n: number, consumer: Consumer): Buffer | null {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('take size must be a non-negative integer');
    if (n > this.levelBytes) {
      if (consumer === 'client') {
        this.shortfalls += 1;
        // The client was told to retry: the filler must top the pool up now, even when
        // the level is above the low-water mark, or the retry would meet the same level.
        this.notifyRefillNeeded();
      }
      return null;
    }
    const first = this.chunks[0]!;
    let out: Buffer;
    if (first.length - this.head >= n) {
      // Inside one chunk: hand out that region itself (no copy). The pool never reads or
      // writes a region again once its head has moved past it, so the caller owns it
      // outright; the server zeroes it after encoding.
      out = first.subarray(this.head, this.head + n);
      this.head += n;
      if (this.head === first.length) {
        this.chunks.shift();
        this.head = 0;
      }
    } else {
      // Across chunks: gather into a fresh, unpooled buffer and zero what was copied.
      out = Buffer.allocUnsafeSlow(n);
      let filled = 0;
      while (filled < n) {
        const chunk = this.chunks[0]!;
        const count = Math.min(chunk.length - this.head, n - filled);
        chunk.copy(out, filled, this.head, this.head + count);
        chunk.fill(0, this.head, this.head + count);
        filled += count;
        this.head += count;
        if (this.head === chunk.length) {
          this.chunks.shift();
          this.head = 0;
        }
      }
    }
    this.levelBytes -= n;
    if (consumer === 'client') this.bytesToClients += n;
    else this.bytesToQuality += n;
    if (this.levelBytes < this.lowWater) this.notifyRefillNeeded();
    return out;
  }

  private notifyRefillNeeded(): void {
    for (const listener of this.refillListeners) listener();
  }
}
