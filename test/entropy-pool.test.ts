// The supply pool: takes are all-or-nothing, no byte leaves twice (clients or quality
// tap), handed-out memory is zeroed, and the filler tops the pool up below low water.
import { describe, expect, it } from 'vitest';

import { EntropyPool, PoolFiller } from '../src/pool/index.js';
import { GetrandomSource } from '../src/sources/getrandom.js';
import { BasicHealth, type EntropySource } from '../src/sources/types.js';

/** Distinct 4-byte big-endian counters, so every byte position of the stream is identifiable. */
function counterChunk(start: number, words: number): Buffer {
  const buf = Buffer.alloc(words * 4);
  for (let i = 0; i < words; i++) buf.writeUInt32BE(start + i, i * 4);
  return buf;
}

function words(buf: Buffer): number[] {
  const out: number[] = [];
  for (let i = 0; i + 4 <= buf.length; i += 4) out.push(buf.readUInt32BE(i));
  return out;
}

describe('EntropyPool', () => {
  it('take returns exactly n bytes or null, and a refusal removes nothing', () => {
    const pool = new EntropyPool({ capacity: 8192 });
    pool.put(counterChunk(0, 1024)); // 4096 bytes
    expect(pool.take(5000)).toBeNull();
    expect(pool.level).toBe(4096);
    expect(pool.stats().shortfalls).toBe(1);
    const a = pool.take(4096)!;
    expect(a.length).toBe(4096);
    expect(words(a)).toEqual(Array.from({ length: 1024 }, (_, i) => i));
    expect(pool.level).toBe(0);
    expect(pool.take(1)).toBeNull();
  });

  it('hands every byte to exactly one consumer, clients and quality tap alike, across chunk edges', () => {
    const pool = new EntropyPool({ capacity: 1 << 20 });
    let next = 0;
    for (const size of [100, 1, 333, 4096, 17, 2000]) {
      pool.put(counterChunk(next, size));
      next += size;
    }
    const seen: number[] = [];
    const sizes = [4, 12, 400, 8, 1024, 4, 7 * 4, 4096, 100];
    let turn = 0;
    for (;;) {
      const n = sizes[turn % sizes.length]!;
      const piece = turn % 3 === 2 ? pool.takeForQuality(n) : pool.take(n);
      if (!piece) break;
      seen.push(...words(piece));
      turn++;
    }
    seen.push(...words(pool.take(pool.level)!));
    expect(seen).toEqual(Array.from({ length: next }, (_, i) => i));
    const stats = pool.stats();
    expect(stats.bytesToClients + stats.bytesToQuality).toBe(next * 4);
    expect(stats.bytesToQuality).toBeGreaterThan(0);
  });

  it('zeroes what it copies across chunks, never touches a region it handed out, and clear() zeroes what it holds', () => {
    const pool = new EntropyPool({ capacity: 8192 });
    const a = Buffer.alloc(1536, 0xaa);
    const b = Buffer.alloc(2048, 0xbb);
    pool.put(a);
    pool.put(b);
    const first = pool.take(1024)!; // inside chunk a: handed out as is
    expect(first.every((x) => x === 0xaa)).toBe(true);
    const across = pool.take(1024)!; // 512 from a, 512 from b: gathered, sources zeroed
    expect(across.subarray(0, 512).every((x) => x === 0xaa)).toBe(true);
    expect(across.subarray(512).every((x) => x === 0xbb)).toBe(true);
    expect(a.subarray(1024).every((x) => x === 0)).toBe(true);
    expect(b.subarray(0, 512).every((x) => x === 0)).toBe(true);
    pool.clear();
    expect(b.every((x) => x === 0)).toBe(true);
    expect(pool.level).toBe(0);
    // The region handed out first still holds its bytes: it belongs to its taker.
    expect(first.every((x) => x === 0xaa)).toBe(true);
  });

  it('accepts no more than its capacity', () => {
    const pool = new EntropyPool({ capacity: 2048 });
    const big = Buffer.alloc(3000, 1);
    expect(pool.put(big)).toBe(2048);
    expect(pool.level).toBe(2048);
    expect(big.subarray(2048).every((b) => b === 0)).toBe(true);
    expect(pool.put(Buffer.alloc(10, 1))).toBe(0);
  });

  it('drawForQuality waits for bytes and leaves the reserve to clients', async () => {
    const pool = new EntropyPool({ capacity: 8192, lowWater: 1024 });
    pool.put(counterChunk(0, 512)); // 2048 bytes, 1024 above the reserve
    const draw = pool.drawForQuality(3072, { reserve: 1024 });
    await new Promise((r) => setImmediate(r));
    expect(pool.level).toBe(1024); // took what was above the reserve, waits for more
    pool.put(counterChunk(512, 1024)); // 4096 more
    const got = await draw;
    expect(got.length).toBe(3072);
    expect(words(got)).toEqual(Array.from({ length: 768 }, (_, i) => i));
    expect(pool.level).toBe(1024 + 4096 - 2048);
  });

  it('drawForQuality stops when aborted', async () => {
    const pool = new EntropyPool({ capacity: 4096 });
    const controller = new AbortController();
    const draw = pool.drawForQuality(1024, { signal: controller.signal, reserve: 0 });
    controller.abort(new Error('shutting down'));
    await expect(draw).rejects.toThrow('shutting down');
  });
});

describe('PoolFiller', () => {
  it('fills to capacity, sleeps, and refills once a take drops below the low-water mark', async () => {
    let reads = 0;
    const inner = new GetrandomSource();
    const source: EntropySource = {
      name: 'counting',
      development: true,
      read: (n) => {
        reads++;
        return inner.read(n);
      },
      health: () => new BasicHealth('counting', true).snapshot(),
      close: async () => {},
    };
    const pool = new EntropyPool({ capacity: 64 * 1024, lowWater: 32 * 1024 });
    const filler = new PoolFiller(pool, source, { chunkSize: 16 * 1024 });
    filler.start();
    await pool.waitForLevel(pool.capacity);
    await new Promise((r) => setTimeout(r, 30));
    const readsWhenFull = reads;
    expect(readsWhenFull).toBe(4);
    pool.take(16 * 1024); // 48 KiB left: above low water, no refill
    await new Promise((r) => setTimeout(r, 30));
    expect(reads).toBe(readsWhenFull);
    pool.take(24 * 1024); // 24 KiB left: below low water
    await pool.waitForLevel(pool.capacity);
    expect(reads).toBeGreaterThan(readsWhenFull);
    await filler.stop();
  });

  it('wakes for a quality draw that finds the pool at its low-water mark (issue 27: runs starved with no client traffic)', async () => {
    const pool = new EntropyPool({ capacity: 64 * 1024, lowWater: 32 * 1024 });
    const filler = new PoolFiller(pool, new GetrandomSource(), { chunkSize: 16 * 1024 });
    filler.start();
    try {
      await pool.waitForLevel(pool.capacity);
      // The first draw takes the pool down to exactly the reserve (= low water), no lower:
      // no take ever leaves it below the mark. The second must still be met.
      const first = await pool.drawForQuality(32 * 1024, { signal: AbortSignal.timeout(10_000) });
      expect(first.length).toBe(32 * 1024);
      const second = await pool.drawForQuality(48 * 1024, { signal: AbortSignal.timeout(10_000) });
      expect(second.length).toBe(48 * 1024);
      expect(pool.level).toBeGreaterThanOrEqual(pool.lowWater);
    } finally {
      await filler.stop();
    }
  });

  it("reads in the source's preferred size unless told otherwise, never beyond the pool's room", async () => {
    const sizes: number[] = [];
    const inner = new GetrandomSource();
    const source: EntropySource = {
      name: 'fast',
      development: true,
      preferredReadBytes: 256 * 1024,
      read: (n) => {
        sizes.push(n);
        return inner.read(n);
      },
      health: () => new BasicHealth('fast', true).snapshot(),
      close: async () => {},
    };
    const pool = new EntropyPool({ capacity: 600 * 1024, lowWater: 0 });
    const filler = new PoolFiller(pool, source);
    filler.start();
    await pool.waitForLevel(pool.capacity);
    await filler.stop();
    expect(sizes).toEqual([256 * 1024, 256 * 1024, 88 * 1024]);
    expect(new GetrandomSource().preferredReadBytes).toBe(4 * 1024 * 1024);
  });

  it('keeps retrying a failing source and recovers', async () => {
    let calls = 0;
    const source: EntropySource = {
      name: 'flaky',
      development: false,
      read: async (n) => {
        calls++;
        if (calls <= 2) throw new Error('device busy');
        return Buffer.alloc(n, 7);
      },
      health: () => new BasicHealth('flaky', false).snapshot(),
      close: async () => {},
    };
    const pool = new EntropyPool({ capacity: 4096 });
    const filler = new PoolFiller(pool, source, { retryMs: 5 });
    filler.start();
    await pool.waitForLevel(4096);
    expect(calls).toBe(3);
    await filler.stop();
  });
});
