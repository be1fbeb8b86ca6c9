// ML-KEM-768 (FIPS 203) for the link ratchet: node:crypto where the runtime has it (Node
// 24.7+, OpenSSL 3.5), otherwise @noble/post-quantum (audited, pure JS). Both speak the
// standard encodings (1,184-byte encapsulation key, 1,088-byte ciphertext, 32-byte shared
// secret), so a site on Node 22 and one on Node 26 ratchet together.
import * as crypto from 'node:crypto';

import { ml_kem768 } from '@noble/post-quantum/ml-kem.js';

export const EK_BYTES = 1184;
export const CT_BYTES = 1088;
export const SS_BYTES = 32;

export interface MlKemKeyPair {
  /** The encapsulation key, sent to the peer. */
  encapsulationKey: Buffer;
  /** Recovers the shared secret from the peer's ciphertext; the private key never leaves. */
  decapsulate(ciphertext: Buffer): Buffer;
}

export interface MlKem768 {
  readonly name: 'node:crypto' | '@noble/post-quantum';
  generate(): MlKemKeyPair;
  encapsulate(encapsulationKey: Buffer): { ciphertext: Buffer; sharedSecret: Buffer };
}

// DER prefixes of ML-KEM-768 keys (OID 2.16.840.1.101.3.4.4.2, RFC 9935 / FIPS 203
// encodings): an SPKI around the raw encapsulation key, and a PKCS#8 around the 64-byte
// seed (d ‖ z) or the 2,400-byte expanded decapsulation key. Built by hand because the
// raw-key import formats are newer than ML-KEM support in some Node lines.
const SPKI_PREFIX = Buffer.from('308204b2300b0609608648016503040402038204a100', 'hex');
const PKCS8_EXPANDED_PREFIX = Buffer.from('30820978020100300b060960864801650304040204820964048209 60'.replace(/ /g, ''), 'hex');

/** A node:crypto private key from the FIPS 203 seed d ‖ z (64 bytes). */
export function nodePrivateKeyFromSeed(seed: Buffer): crypto.KeyObject {
  if (seed.length !== 64) throw new RangeError('an ML-KEM seed is 64 bytes (d ‖ z)');
  const der = Buffer.concat([Buffer.from('3054020100300b0609608648016503040402044280', 'hex'), Buffer.from([0x40]), seed]);
  return crypto.createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

/** A node:crypto private key from the 2,400-byte expanded decapsulation key. */
export function nodePrivateKeyFromExpanded(dk: Buffer): crypto.KeyObject {
  if (dk.length !== 2400) throw new RangeError('an ML-KEM-768 decapsulation key is 2,400 bytes');
  return crypto.createPrivateKey({ key: Buffer.concat([PKCS8_EXPANDED_PREFIX, dk]), format: 'der', type: 'pkcs8' });
}

export function nodePublicKey(ek: Buffer): crypto.KeyObject {
  if (ek.length !== EK_BYTES) throw new RangeError(`an ML-KEM-768 encapsulation key is ${EK_BYTES} bytes`);
  return crypto.createPublicKey({ key: Buffer.concat([SPKI_PREFIX, ek]), format: 'der', type: 'spki' });
}

/** The raw encapsulation key of a node:crypto public key (the SPKI minus its prefix). */
export function rawEncapsulationKey(key: crypto.KeyObject): Buffer {
  return key.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
}

interface NodeKem {
  encapsulate(key: crypto.KeyObject): { sharedKey: Buffer; ciphertext: Buffer };
  decapsulate(key: crypto.KeyObject, ciphertext: Buffer): Buffer;
}

const nodeKem = crypto as unknown as Partial<NodeKem>;

/** True when node:crypto has ML-KEM-768 (Node 24.7+ on OpenSSL 3.5). */
export function nodeMlKemAvailable(): boolean {
  if (typeof nodeKem.encapsulate !== 'function' || typeof nodeKem.decapsulate !== 'function') return false;
  try {
    crypto.generateKeyPairSync('ml-kem-768' as never);
    return true;
  } catch {
    return false;
  }
}

export function nodeMlKem(): MlKem768 {
  if (!nodeMlKemAvailable()) throw new Error(`node:crypto has no ML-KEM-768 on Node ${process.version}`);
  const kem = nodeKem as NodeKem;
  return {
    name: 'node:crypto',
    generate() {
      const { publicKey, privateKey } = crypto.generateKeyPairSync('ml-kem-768' as never) as unknown as crypto.KeyPairKeyObjectResult;
      return {
        encapsulationKey: rawEncapsulationKey(publicKey),
        decapsulate: (ciphertext) => {
          if (ciphertext.length !== CT_BYTES) throw new RangeError(`an ML-KEM-768 ciphertext is ${CT_BYTES} bytes`);
          return Buffer.from(kem.decapsulate(privateKey, ciphertext));
        },
      };
    },
    encapsulate(encapsulationKey) {
      const { sharedKey, ciphertext } = kem.encapsulate(nodePublicKey(encapsulationKey));
      return { ciphertext: Buffer.from(ciphertext), sharedSecret: Buffer.from(sharedKey) };
    },
  };
}

export function nobleMlKem(): MlKem768 {
  return {
    name: '@noble/post-quantum',
    generate() {
      const { publicKey, secretKey } = ml_kem768.keygen(crypto.randomBytes(64));
      return {
        encapsulationKey: Buffer.from(publicKey),
        decapsulate: (ciphertext) => {
          if (ciphertext.length !== CT_BYTES) throw new RangeError(`an ML-KEM-768 ciphertext is ${CT_BYTES} bytes`);
          const ss = Buffer.from(ml_kem768.decapsulate(ciphertext, secretKey));
          secretKey.fill(0);
          return ss;
        },
      };
    },
    encapsulate(encapsulationKey) {
      if (encapsulationKey.length !== EK_BYTES) throw new RangeError(`an ML-KEM-768 encapsulation key is ${EK_BYTES} bytes`);
      const { cipherText, sharedSecret } = ml_kem768.encapsulate(encapsulationKey, crypto.randomBytes(32));
      return { ciphertext: Buffer.from(cipherText), sharedSecret: Buffer.from(sharedSecret) };
    },
  };
}

let chosen: MlKem768 | undefined;

/** The runtime's ML-KEM-768: node:crypto when it has one, else @noble/post-quantum. */
export function mlKem768(): MlKem768 {
  chosen ??= nodeMlKemAvailable() ? nodeMlKem() : nobleMlKem();
  return chosen;
}
