// Where the 256-bit seeds of new keys come from. The KME only needs "n fresh bytes, each
// handed out once"; adapters connect it to the local supply pool, to a remote entropy API
// (through the entropy client), or to the operating system's CSPRNG (development, tests).
import { randomBytes } from 'node:crypto';

import type { EntropyClient } from '../client/index.js';
import type { EntropyPool } from '../pool/index.js';

export interface SeedSource {
  /** Exactly `bytes` fresh bytes, never given to anyone else; rejects when none are available. */
  take(bytes: number): Promise<Buffer>;
}

/** Raised when the source cannot supply now; the KME answers 503 (retry later). */
export class SeedUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SeedUnavailableError';
  }
}

/**
 * The operating system's CSPRNG (getrandom). For development and tests. Small requests are
 * cut from a 16 KiB buffer (one system call per 512 seeds rather than one per request); the
 * bytes handed out are copied, then wiped from the buffer, and never handed out again.
 */
export function systemSeedSource(bufferBytes = 16 * 1024): SeedSource {
  let buffered = Buffer.alloc(0);
  let offset = 0;
  return {
    take: async (bytes) => {
      if (bytes > bufferBytes / 4) return randomBytes(bytes);
      if (offset + bytes > buffered.length) {
        buffered.fill(0);
        buffered = randomBytes(bufferBytes);
        offset = 0;
      }
      const out = Buffer.from(buffered.subarray(offset, offset + bytes));
      buffered.fill(0, offset, offset + bytes);
      offset += bytes;
      return out;
    },
  };
}

/**
 * The local supply pool. A short pool waits up to `waitMs` for the filler, then fails
 * (503) rather than queueing key requests without bound.
 */
export function poolSeedSource(pool: EntropyPool, waitMs = 2000): SeedSource {
  return {
    async take(bytes) {
      const now = pool.take(bytes);
      if (now) return now;
      try {
        await pool.waitForLevel(bytes, AbortSignal.timeout(waitMs));
      } catch {
        throw new SeedUnavailableError('the entropy pool is empty');
      }
      const later = pool.take(bytes);
      if (!later) throw new SeedUnavailableError('the entropy pool is empty');
      return later;
    },
  };
}

/**
 * A remote entropy API. Blocks are fetched whole (1 KiB = 32 seeds) and handed out in
 * order; the bytes given out are cut from the buffer, so none is used twice.
 */
export function clientSeedSource(client: Pick<EntropyClient, 'fetch'>, blocksPerFetch = 4): SeedSource {
  let buffered = Buffer.alloc(0);
  let refill: Promise<void> | null = null;
  const fill = async (): Promise<void> => {
    try {
      const fresh = await client.fetch(blocksPerFetch);
      buffered = Buffer.concat([buffered, fresh]);
      fresh.fill(0);
    } catch (err) {
      throw new SeedUnavailableError(`the entropy API gave no data: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  return {
    async take(bytes) {
      while (buffered.length < bytes) {
        refill ??= fill().finally(() => {
          refill = null;
        });
        await refill;
      }
      const out = Buffer.from(buffered.subarray(0, bytes));
      buffered.fill(0, 0, bytes);
      buffered = buffered.subarray(bytes);
      return out;
    },
  };
}
