// The link's chain of secrets. Each epoch e has a 32-byte chain secret S(e); the next one
// mixes in the shared secret of one fresh ML-KEM-768 exchange (and the link PSK, if any):
//
//   S(e+1) = HKDF-SHA-256(IKM = S(e) ‖ ss(e+1) ‖ PSK?, salt = "", info = "qentropy pqlink chain v1" ‖ u32be(e+1) ‖ link)
//
// (S(0) = 32 zero bytes: a new chain starts from the exchange alone.) Keys of epoch e use
// K(e) = HKDF(S(e), info = "qentropy pqlink key v1" ‖ u32be(e) ‖ link) in the place of the
// PSK in the KME's key derivation, so a key needs its seed and K(e). HKDF only runs
// forward: S(e) and ss(e) give S(e+1), but S(e+1) says nothing about S(e); once S(e) and
// K(e) are erased at both sites, no later leak (PSK, TLS keys, site key, S(now)) brings
// back keys of epoch e, and a recording of the link holds only ML-KEM ciphertexts.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export const SECRET_BYTES = 32;
const ZERO = Buffer.alloc(SECRET_BYTES);

/** The link both sites name the same way: the two KME IDs in byte order. */
export function linkLabel(a: string, b: string): Buffer {
  const [x, y] = [a, b].sort();
  return Buffer.from(`${x}\n${y}`, 'utf8');
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function hkdf(ikm: Buffer, info: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', ikm, Buffer.alloc(0), info, SECRET_BYTES));
}

export function nextChainSecret(previous: Buffer | undefined, sharedSecret: Buffer, psk: Buffer | undefined, epoch: number, link: Buffer): Buffer {
  const ikm = Buffer.concat([previous ?? ZERO, sharedSecret, ...(psk ? [psk] : [])]);
  const next = hkdf(ikm, Buffer.concat([Buffer.from('qentropy pqlink chain v1'), u32(epoch), link]));
  ikm.fill(0);
  return next;
}

/** K(e): what the key derivation of epoch e mixes in beside each seed. */
export function keySecret(chain: Buffer, epoch: number, link: Buffer): Buffer {
  return hkdf(chain, Buffer.concat([Buffer.from('qentropy pqlink key v1'), u32(epoch), link]));
}

/** Key confirmation: proves to the peer that both ends hold the same S(e) without revealing it. */
export function confirmation(chain: Buffer, epoch: number, link: Buffer): string {
  return createHmac('sha256', chain).update('qentropy pqlink confirm v1').update(u32(epoch)).update(link).digest('hex');
}

export function confirmationMatches(chain: Buffer, epoch: number, link: Buffer, claimed: unknown): boolean {
  if (typeof claimed !== 'string' || !/^[0-9a-f]{64}$/.test(claimed)) return false;
  return timingSafeEqual(Buffer.from(confirmation(chain, epoch, link), 'hex'), Buffer.from(claimed, 'hex'));
}

export const SUITE_RATCHET = 'mlkem768-ratchet+hkdf-sha256';

/** The suite of a ratcheted link; names the PSK by the same fingerprint as the static suites. */
export function ratchetSuite(pskFingerprint: string | undefined): string {
  return pskFingerprint ? `${SUITE_RATCHET}+psk:${pskFingerprint}` : SUITE_RATCHET;
}
