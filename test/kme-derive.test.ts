// Key derivation checked against independent implementations: RFC 5869's published test
// vector, and OpenSSL's HKDF (`openssl kdf`) for our exact construction (docs/kme.md):
// IKM = seed ‖ PSK, empty salt, info = key_ID ‖ u32be(size) ‖ u8 len ‖ origin ‖ u8 len ‖ peer.
import { execFileSync } from 'node:child_process';
import { hkdfSync, randomBytes, randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { deriveKey, hkdfSha256, pskFingerprint, suiteFor } from '../src/kme/derive.js';

function opensslHkdf(ikm: Buffer, info: Buffer, length: number): Buffer {
  const out = execFileSync('openssl', ['kdf', '-keylen', String(length), '-kdfopt', 'digest:SHA256', '-kdfopt', `hexkey:${ikm.toString('hex')}`, '-kdfopt', `hexinfo:${info.toString('hex')}`, 'HKDF'], { encoding: 'utf8' });
  return Buffer.from(out.trim().replace(/:/g, ''), 'hex');
}

function handInfo(keyId: string, size: number, origin: string, peer: string): Buffer {
  const size4 = Buffer.alloc(4);
  size4.writeUInt32BE(size);
  return Buffer.concat([Buffer.from(keyId), size4, Buffer.from([origin.length]), Buffer.from(origin), Buffer.from([peer.length]), Buffer.from(peer)]);
}

describe('kme key derivation', () => {
  it('HKDF-SHA-256 matches RFC 5869 test case 3 (empty salt and info)', () => {
    const okm = hkdfSha256(Buffer.alloc(22, 0x0b), Buffer.alloc(0), 42);
    expect(okm.toString('hex')).toBe('8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8');
  });

  it('matches OpenSSL HKDF for the documented construction, with and without a PSK', () => {
    for (const [size, psk] of [[256, undefined], [512, randomBytes(32)], [1032, randomBytes(48)]] as const) {
      const seed = randomBytes(32);
      const keyId = randomUUID();
      const key = deriveKey(seed, psk, { keyId, size, origin: 'site-A', peer: 'B' });
      const ikm = psk ? Buffer.concat([seed, psk]) : seed;
      expect(key).toEqual(opensslHkdf(ikm, handInfo(keyId, size, 'site-A', 'B'), size / 8));
      expect(key).toEqual(Buffer.from(hkdfSync('sha256', ikm, Buffer.alloc(0), handInfo(keyId, size, 'site-A', 'B'), size / 8)));
    }
  });

  it('binds the key to its ID, size and both sites (length-prefixed, so AB|C differs from A|BC)', () => {
    const seed = randomBytes(32);
    const keyId = randomUUID();
    const base = deriveKey(seed, undefined, { keyId, size: 256, origin: 'AB', peer: 'C' });
    expect(deriveKey(seed, undefined, { keyId, size: 256, origin: 'A', peer: 'BC' })).not.toEqual(base);
    expect(deriveKey(seed, undefined, { keyId, size: 256, origin: 'C', peer: 'AB' })).not.toEqual(base);
    expect(deriveKey(seed, undefined, { keyId: randomUUID(), size: 256, origin: 'AB', peer: 'C' })).not.toEqual(base);
    expect(deriveKey(seed, undefined, { keyId, size: 512, origin: 'AB', peer: 'C' }).subarray(0, 32)).not.toEqual(base);
  });

  it('names the suite by PSK fingerprint without revealing the PSK', () => {
    const psk = randomBytes(32);
    expect(suiteFor(undefined)).toBe('hkdf-sha256');
    expect(suiteFor(psk)).toBe(`hkdf-sha256+psk:${pskFingerprint(psk)}`);
    expect(suiteFor(psk)).not.toContain(psk.toString('hex').slice(0, 16));
    expect(suiteFor(randomBytes(32))).not.toBe(suiteFor(psk));
  });
});
