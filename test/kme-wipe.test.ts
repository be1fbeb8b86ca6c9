// Erasure in memory (issue 26 item 8): a request's copies of the link secret (a ratcheted
// link's K(e), or the PSK) and of seeds are zeroed as soon as its keys are derived, so
// once an epoch is erased no request still holds its K(e) in a buffer the collector has
// not reclaimed yet. What is observable is the buffer a function was handed: all zeros
// afterwards. (Keys leave as base64 strings in the ETSI answer, which JavaScript cannot
// overwrite; docs/kme.md says so.)
import { randomBytes, randomUUID } from 'node:crypto';

import { afterEach, describe, expect, it } from 'vitest';

import { deriveKey, SUITE_TLS_ONLY } from '../src/kme/derive.js';
import type { LinkKeyContext, LinkKeys } from '../src/kme/link-keys.js';
import { StaticLinkKeys } from '../src/kme/link-keys.js';
import { mintKeys, seedBytes } from '../src/kme/mint.js';
import { KmeService } from '../src/kme/service.js';
import { SiteKey } from '../src/kme/site-key.js';
import { KeyStore } from '../src/kme/store.js';
import { openDatabase, type Db } from '../src/storage/db.js';

const ZERO = Buffer.alloc(32);

/** A link whose every context is a fresh secret the test keeps a reference to. */
class RecordingLinkKeys implements LinkKeys {
  readonly handed: Buffer[] = [];
  readonly values: Buffer[] = [];

  private context(): LinkKeyContext {
    const secret = randomBytes(32);
    this.handed.push(secret);
    this.values.push(Buffer.from(secret));
    return { suite: 'test-suite', epoch: 7, secret };
  }

  async forSending(): Promise<LinkKeyContext> {
    return this.context();
  }

  async forReceiving(): Promise<LinkKeyContext> {
    return this.context();
  }
}

describe('per-request secrets are zeroed once used', () => {
  let db: Db | undefined;
  afterEach(async () => {
    await db?.close();
    db = undefined;
  });

  it('minting keys zeroes the seeds and the link secret it was handed, and the keys still derive from them', () => {
    const secret = randomBytes(32);
    const secretValue = Buffer.from(secret);
    const seeds = randomBytes(seedBytes(2, 1));
    const seedValues = Buffer.from(seeds);
    const minted = mintKeys({
      origin: 'A', owner: 'a1', number: 2, size: 256, created: 1, expires: 2,
      slaves: new Map([['B', []]]),
      links: new Map([['B', { suite: 'test-suite', epoch: 7, secret }]]),
      seeds,
      digest: () => 'digest',
    });
    expect(secret).toEqual(ZERO);
    expect(seeds.equals(Buffer.alloc(seeds.length))).toBe(true);
    const [first] = minted.keys;
    expect(Buffer.from(first!.key, 'base64')).toEqual(deriveKey(seedValues.subarray(0, 32), secretValue, { keyId: first!.key_ID, size: 256, origin: 'A', peer: 'B' }));
  });

  it('a link without the ratchet hands each request its own copy of the PSK, so zeroing it leaves the link\'s PSK intact', async () => {
    const psk = randomBytes(32);
    const pskValue = Buffer.from(psk);
    const link = new StaticLinkKeys(psk);
    const context = await link.forSending();
    expect(context.secret).toEqual(pskValue);
    context.secret!.fill(0);
    expect(psk).toEqual(pskValue);
    expect((await link.forReceiving(context.suite)).secret).toEqual(pskValue);
    expect((await new StaticLinkKeys(undefined).forSending()).suite).toBe(SUITE_TLS_ONLY);
  });

  it('a delivery at the peer zeroes the copy of K(e) it was handed once the keys are derived and sealed', async () => {
    db = await openDatabase({ url: 'sqlite::memory:' });
    const store = new KeyStore(db);
    await store.migrate();
    const link = new RecordingLinkKeys();
    const siteKey = SiteKey.fromBytes(randomBytes(32));
    const service = new KmeService({
      id: 'B',
      peers: { A: { url: 'https://127.0.0.1:9' } },
      linkKeys: () => link,
      saes: { a1: 'A', b1: 'B' },
      keySize: 256, minKeySize: 64, maxKeySize: 1024, maxKeyPerRequest: 16, maxSaeIdCount: 0,
      maxKeyCount: 100, keyTtlSeconds: 60, orphanKeyTtlSeconds: 10, peerTimeoutMs: 1000,
      tls: { cert: '', key: '', ca: '' },
      store,
      siteKey,
      seedSource: { take: async (n) => randomBytes(n) },
    });
    try {
      const seed = randomBytes(32);
      const keyId = randomUUID();
      const wire = { key_ID: keyId, size: 256, seed: seed.toString('base64'), origin: 'A', peer: 'B', created: Date.now(), suite: 'test-suite', epoch: 7, master_SAE_ID: 'a1', slave_SAE_IDs: [] };
      expect(await service.deliver({ role: 'kme', id: 'A' }, { keys: [wire] })).toMatchObject({ stored: 1, refused: [] });
      expect(link.handed).toHaveLength(1);
      expect(link.handed[0]).toEqual(ZERO);
      // The key stored is the one K(e) gave.
      const [key] = (await service.decKeys({ role: 'sae', id: 'b1' }, 'A', [{ keyId }])).keys;
      expect(Buffer.from(key!.key, 'base64')).toEqual(deriveKey(seed, link.values[0], { keyId, size: 256, origin: 'A', peer: 'B' }));
    } finally {
      await service.close();
    }
  });
});
