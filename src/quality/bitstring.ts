// Packed bits -> '0'/'1' text in native code (native/bitstring): the `random` field of the
// quality APIs is up to 5,242,880 characters per record, expanded chunk by chunk.
import { addon } from '../native/addon.js';

interface BitstringAddon {
  bitsToText(bytes: Uint8Array, nbits?: number): Buffer;
  textToBits(text: Uint8Array): Buffer;
}

function native(): BitstringAddon {
  const a = addon as Partial<BitstringAddon>;
  if (typeof a.bitsToText !== 'function' || typeof a.textToBits !== 'function') {
    throw new Error('this build of the qentropy addon has no bitstring functions (rebuild with npm run build:native)');
  }
  return a as BitstringAddon;
}

/** The first `nbits` bits of `bytes` (most significant bit of each byte first) as ASCII '0'/'1'. */
export function bitsToText(bytes: Uint8Array, nbits = bytes.length * 8): Buffer {
  return native().bitsToText(bytes, nbits);
}

/** '0'/'1' text back to packed bits (the last byte's unused low bits are zero). */
export function textToBits(text: string | Uint8Array): Buffer {
  return native().textToBits(typeof text === 'string' ? Buffer.from(text, 'latin1') : text);
}
