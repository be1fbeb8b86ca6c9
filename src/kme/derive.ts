// Key material from metadata. Both sites compute
//   key = HKDF-SHA-256(IKM = seed ‖ PSK, salt = "", info, L = size / 8)
//   info = utf8(key_ID) ‖ u32be(size) ‖ u8(len origin) ‖ utf8(origin) ‖ u8(len peer) ‖ utf8(peer)
// The length prefixes make the concatenation unambiguous ("AB"+"C" ≠ "A"+"BC"). Binding
// key_ID, size and both site IDs means a seed replayed under other metadata yields an
// unrelated key. The PSK is optional and per link; the suite names whether it was used and
// which PSK (by fingerprint), so two sites that disagree fail loudly instead of silently
// deriving different keys.
//
// A key multicast to SAEs at a further site S (additional_slave_SAE_IDs) is the key of the
// first link; S gets its own fresh seed and `wrap` = key ⊕ HKDF(seed_S ‖ PSK_AS, info(key_ID,
// size, origin, S)), so the key stays as strong as the A–S link (a one-time pad from S's
// link secret) and S recovers it as wrap ⊕ its own derivation (wrapForSite).
import { createHmac, createSecretKey } from 'node:crypto';

export const SEED_BYTES = 32;
/** HKDF-SHA-256 can produce at most 255 hash blocks. */
export const MAX_DERIVABLE_BITS = 255 * 32 * 8;

export const SUITE_TLS_ONLY = 'hkdf-sha256';
export const SUITE_PSK_PREFIX = 'hkdf-sha256+psk:';
/**
 * Appended to the link's suite for a wrapped (multicast) key, so a peer that does not know
 * wrapping refuses the delivery (a suite mismatch) instead of storing the unwrapped pad.
 */
export const SUITE_WRAPPED_SUFFIX = '+wrap';

export interface KeyMetadata {
  keyId: string;
  /** Bits (multiple of 8). */
  size: number;
  origin: string;
  peer: string;
}

/** A public name for a PSK: HMAC(psk, label), so it identifies the PSK without revealing it. */
export function pskFingerprint(psk: Buffer): string {
  return createHmac('sha256', psk).update('qentropy kme link psk id v1').digest('hex').slice(0, 16);
}

export function suiteFor(psk: Buffer | undefined): string {
  return psk ? `${SUITE_PSK_PREFIX}${pskFingerprint(psk)}` : SUITE_TLS_ONLY;
}

export function hkdfInfo(meta: KeyMetadata): Buffer {
  const id = Buffer.from(meta.keyId, 'utf8');
  const origin = Buffer.from(meta.origin, 'utf8');
  const peer = Buffer.from(meta.peer, 'utf8');
  if (origin.length > 255 || peer.length > 255) throw new RangeError('site IDs are limited to 255 bytes');
  const size = Buffer.alloc(4);
  size.writeUInt32BE(meta.size);
  return Buffer.concat([id, size, Buffer.from([origin.length]), origin, Buffer.from([peer.length]), peer]);
}

export function deriveKey(seed: Buffer, psk: Buffer | undefined, meta: KeyMetadata): Buffer {
  if (seed.length !== SEED_BYTES) throw new RangeError(`seed must be ${SEED_BYTES} bytes`);
  if (meta.size % 8 !== 0 || meta.size <= 0 || meta.size > MAX_DERIVABLE_BITS) throw new RangeError('key size out of range');
  const ikm = psk ? Buffer.concat([seed, psk]) : seed;
  const key = hkdfSha256(ikm, hkdfInfo(meta), meta.size / 8);
  if (psk) ikm.fill(0);
  return key;
}

/** key ⊕ pad (equal lengths): wraps a key for a further site, and unwraps it there. */
export function wrapForSite(key: Buffer, pad: Buffer): Buffer {
  if (key.length !== pad.length) throw new RangeError('a wrapped key and its pad differ in length');
  const out = Buffer.allocUnsafe(key.length);
  for (let i = 0; i < key.length; i++) out[i] = key[i]! ^ pad[i]!;
  return out;
}

const ZERO_SALT = createSecretKey(Buffer.alloc(32));

/**
 * RFC 5869 HKDF-SHA-256 with an empty salt (= HashLen zero bytes), written with node:crypto's
 * HMAC: `hkdfSync` fetches the OpenSSL KDF on every call (12–33 µs against 2.4–6 µs for one
 * HMAC, benchmarks/README.md issue 29 item 8), which matters at thousands of keys per second.
 * The HMAC keys are KeyObjects: given a Buffer, Node 22+ imports the key anew inside every
 * HMAC (16 µs against 2.4 µs, plus 1 µs to make the KeyObject). The PRK's Buffer is zeroed
 * at once; its KeyObject copy is freed, cleared, when collected. Checked against
 * `openssl kdf` in tests.
 */
export function hkdfSha256(ikm: Buffer, info: Buffer, length: number): Buffer {
  const prkBytes = createHmac('sha256', ZERO_SALT).update(ikm).digest();
  const prk = createSecretKey(prkBytes);
  prkBytes.fill(0);
  const blocks = Math.ceil(length / 32);
  const out = Buffer.allocUnsafe(blocks * 32);
  let previous = Buffer.alloc(0);
  for (let i = 1; i <= blocks; i++) {
    const block = createHmac('sha256', prk).update(previous).update(info).update(Buffer.from([i])).digest();
    previous.fill(0);
    previous = block;
    previous.copy(out, (i - 1) * 32);
  }
  previous.fill(0);
  const key = Buffer.from(out.subarray(0, length));
  out.fill(0);
  return key;
}
