// Generated test data for the battery: good bits, biased bits and repeating bits.
import crypto from 'node:crypto';

/** Deterministic good bits: SHA-256 in counter mode over a seed. */
export function prfBytes(n: number, seed: string): Buffer {
  const out = Buffer.alloc(n);
  for (let i = 0, off = 0; off < n; i++, off += 32) {
    crypto.createHash('sha256').update(`${seed}:${i}`).digest().copy(out, off);
  }
  return out;
}

/** Each bit is 1 with probability p (independent), from the OS generator. */
export function biasedBytes(n: number, p: number): Buffer {
  const raw = crypto.randomBytes(n * 8 * 4);
  const out = Buffer.alloc(n);
  const threshold = Math.round(p * 2 ** 32);
  for (let i = 0; i < n * 8; i++) {
    if (raw.readUInt32LE(i * 4) < threshold) out[i >> 3]! |= 0x80 >> (i & 7);
  }
  return out;
}
