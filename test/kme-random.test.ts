// The KME draws IVs and (in development) seeds from the CSPRNG in bulk; bulk drawing must
// never hand the same bytes out twice, and sealed keys must still open (and only with their
// associated data).
import { randomBytes } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { systemSeedSource } from '../src/kme/seed-source.js';
import { SiteKey } from '../src/kme/site-key.js';

describe('kme bulk randomness', () => {
  it('every seal uses a fresh IV, across pool refills, and opens only with its associated data', () => {
    const siteKey = SiteKey.fromBytes(randomBytes(32));
    const key = randomBytes(32);
    const ivs = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const aad = Buffer.from(`key-${i}`);
      const sealed = siteKey.seal(key, aad);
      ivs.add(sealed.subarray(0, 12).toString('hex'));
      if (i % 500 === 0) {
        expect(siteKey.open(sealed, aad)).toEqual(key);
        expect(() => siteKey.open(sealed, Buffer.from('another key'))).toThrow();
      }
    }
    expect(ivs.size).toBe(3000);
  });

  it('the system seed source never repeats bytes across takes and buffer refills', async () => {
    const source = systemSeedSource(1024);
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const seed = await source.take(32);
      expect(seed).toHaveLength(32);
      seen.add(seed.toString('hex'));
    }
    expect(seen.size).toBe(200);
    const big = await source.take(4096); // larger than a quarter of the buffer: drawn directly
    expect(big).toHaveLength(4096);
    expect(seen.has(big.subarray(0, 32).toString('hex'))).toBe(false);
  });
});
