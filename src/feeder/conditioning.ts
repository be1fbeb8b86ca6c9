// The conditioning function of the combining mode and its entropy credit, by NIST SP 800-90B.
//
// Function: SHA-256 over one fixed-size input from every source in use, in config order. A
// hash function is on §3.1.5.1.1's list of vetted conditioning components (as are HMAC,
// CMAC, CBC-MAC and the two derivation functions). HMAC-SHA-256 would need a key: a fixed
// one adds nothing over the bare hash against a provider that cannot see the other
// inputs, and a secret one would make the output impossible for an auditor to recompute
// from the inputs. The plain hash keeps the output a public function of the inputs, with
// every input bit influencing every output bit, so no single provider controls or knows it.
//
// Credit: §3.1.5.1.2's Output_Entropy(n_in, n_out, nw, h_in), with h_in the sum of the
// inputs' assessed min-entropy (the sources are independent providers, so their entropy
// adds; a source without an assessment adds nothing), n_out = nw = 256 for SHA-256.
import crypto from 'node:crypto';

/** Bytes of one conditioned output (SHA-256). */
export const CONDITIONED_BYTES = 32;
/** Bytes each source in use contributes to one output: twice the output, so a single
 *  source assessed at 4 bits per byte or more can still give a near-full output. */
export const INPUT_BYTES_PER_SOURCE = 64;
/** The narrowest internal width of SHA-256, in bits (its chaining value). */
const SHA256_NW = 256;

/** SHA-256 over the inputs, concatenated in order (each INPUT_BYTES_PER_SOURCE long). */
export function condition(inputs: readonly Uint8Array[]): Buffer {
  const hash = crypto.createHash('sha256');
  for (const input of inputs) hash.update(input);
  return hash.digest();
}

/**
 * SP 800-90B §3.1.5.1.2, Output_Entropy(n_in, n_out, nw, h_in), in bits:
 *   P_high = 2^-h_in,  P_low = (1 - P_high) / (2^n_in - 1),  n = min(n_out, nw)
 *   psi    = 2^(n_in - n) * P_low + P_high
 *   U      = 2^(n_in - n) + sqrt(2 n 2^(n_in - n) ln 2),  omega = U * P_low
 *   h_out  = -log2(max(psi, omega))
 * n_in runs to thousands of bits, beyond a double's range, so psi and omega are computed
 * scaled by 2^n: psi*2^n = (1 - P_high) r + 2^(n - h_in) and
 * omega*2^n = (1 - P_high) r (1 + sqrt(2 n ln2 2^(n - n_in))), with r = 2^n_in / (2^n_in - 1).
 * Never more than n (psi and omega are capped at 1 in the reference tool; the scaled
 * values at 2^n).
 */
export function outputEntropy(nIn: number, nOut: number, nw: number, hIn: number): number {
  if (!(nIn > 0 && nOut > 0 && nw > 0)) throw new RangeError('n_in, n_out and nw must be positive');
  if (!(hIn >= 0) || hIn > nIn) throw new RangeError(`h_in must be from 0 to n_in (${nIn}), got ${hIn}`);
  if (hIn === 0) return 0;
  const n = Math.min(nOut, nw);
  const pHigh = 2 ** -hIn;
  const r = nIn >= 1024 ? 1 : 1 / -Math.expm1(-nIn * Math.LN2);
  const psi = (1 - pHigh) * r + 2 ** (n - hIn);
  const omega = (1 - pHigh) * r * (1 + Math.sqrt(2 * n * Math.LN2 * 2 ** (n - nIn)));
  return Math.max(0, Math.min(n, n - Math.log2(Math.max(psi, omega))));
}

export interface CombinedCredit {
  /** Sum of the inputs' assessed min-entropy, bits per output. */
  inputEntropyBits: number;
  /** Output_Entropy of one 32-byte output, bits. */
  outputEntropyBits: number;
  /** Whole bits per output byte the kernel may be told: 8 at full entropy (SP 800-90C: 2^-32 short per bit at most), else floor(h_out / 32). */
  creditBitsPerByte: number;
}

/** The credit of one output conditioned from sources of these assessed min-entropies (bits per byte; 0: not assessed). */
export function combinedCredit(assessedPerByte: readonly number[]): CombinedCredit {
  const nIn = assessedPerByte.length * INPUT_BYTES_PER_SOURCE * 8;
  const inputEntropyBits = assessedPerByte.reduce((sum, h) => sum + Math.min(8, Math.max(0, h)) * INPUT_BYTES_PER_SOURCE, 0);
  const outputEntropyBits = nIn === 0 ? 0 : outputEntropy(nIn, CONDITIONED_BYTES * 8, SHA256_NW, inputEntropyBits);
  // Output_Entropy is always below n_out: 8 bits per byte only when the output has full
  // entropy as SP 800-90C defines it (at most 2^-32 short per bit), else whole bits below.
  const outputBits = CONDITIONED_BYTES * 8;
  const full = nIn > 0 && outputBits - outputEntropyBits <= outputBits * 2 ** -32;
  return { inputEntropyBits, outputEntropyBits, creditBitsPerByte: full ? 8 : Math.min(7, Math.floor(outputEntropyBits / CONDITIONED_BYTES)) };
}
