// The base64 block codec: entropy API response bodies <-> bytes, natively, in one pass.
//
// All four calls are synchronous on purpose: a 512-block body (about 700 KB) decodes or
// encodes in well under a millisecond, less than handing it to a worker thread would cost.
// See docs/codec.md for the exact JSON accepted and the error codes.
import { addon } from './addon.js';

/** Codes carried by {@link CodecError}. */
export type CodecErrorCode =
  /** A block does not decode to the required number of bytes (1,024, or the appliance block size). */
  | 'EBLOCKSIZE'
  /** A character outside the base64 alphabet inside a block (after JSON unescaping). */
  | 'EBASE64'
  /** Missing, misplaced or non-canonical `=` padding (RFC 4648 §4, §3.5). */
  | 'EPADDING'
  /** `size` is missing, not an integer, or not the number of blocks. */
  | 'ESIZE'
  /** The block array is empty, longer than 512, or not the expected `blockCount`. */
  | 'ECOUNT'
  /** Not JSON, not an object of the expected shape, a duplicate key, or trailing data. */
  | 'ESHAPE'
  /** Encoder input that is not 1..512 whole blocks. */
  | 'EINVAL';

/** The error every codec call throws for bad input (a plain `Error` with these fields). */
export interface CodecError extends Error {
  code: CodecErrorCode;
  /** Index of the offending block in the array, when the error is about one block. */
  blockIndex?: number;
  /** Index of the offending character within that block's base64 text (after unescaping). */
  position?: number;
  /** Byte offset in the body where the problem was found. */
  offset?: number;
}

const CODES: ReadonlySet<string> = new Set(['EBLOCKSIZE', 'EBASE64', 'EPADDING', 'ESIZE', 'ECOUNT', 'ESHAPE', 'EINVAL']);

/** Type guard for {@link CodecError}. */
export function isCodecError(e: unknown): e is CodecError {
  if (!(e instanceof Error)) return false;
  const code: unknown = (e as Error & { code?: unknown }).code;
  return typeof code === 'string' && CODES.has(code);
}

export interface CodecOptions {
  /** `false` forces the portable scalar kernels (same bytes; for tests and comparisons). */
  simd?: boolean;
}

export interface ApplianceDecodeOptions extends CodecOptions {
  /** Required bytes per block (the request's `block_size`); default: set by the first block. */
  blockSize?: number;
  /** Required number of blocks (the request's `block_count`); default: any 1..512. */
  blockCount?: number;
}

export interface ApplianceBlocks {
  /** The blocks, concatenated. */
  data: Buffer;
  blockSize: number;
  blockCount: number;
}

/**
 * Decodes an entropy service response body, `{"random": [base64...], "size": N}`, into one
 * Buffer of N × 1,024 bytes. One pass over the body, no `JSON.parse`, no string per block.
 * Runs synchronously (< 1 ms for 512 blocks). Pass the body as the Buffer it arrived in;
 * a string works too but is first converted to UTF-8.
 * @throws {CodecError} naming the block and the reason; never returns partial data.
 */
export function decodeEntropyResponse(body: Uint8Array | string, options?: CodecOptions): Buffer {
  return addon.decodeEntropyResponse(body, options) as Buffer;
}

/**
 * Encodes N × 1,024 bytes (1 ≤ N ≤ 512) as the response body
 * `{"random":["...",...],"size":N}`, returned as a Buffer ready to send. Synchronous
 * (< 1 ms for 512 blocks).
 * @throws {CodecError} `EINVAL` when the input is not 1..512 whole blocks.
 */
export function encodeEntropyResponse(bytes: Uint8Array, options?: CodecOptions): Buffer {
  return addon.encodeEntropyResponse(bytes, options) as Buffer;
}

/**
 * Decodes the provider's appliance response `{"entropy": [base64...], "extensions": [...]}`:
 * 1..512 blocks, all of one size in 1..1,024 bytes. Synchronous.
 * @throws {CodecError} naming the block and the reason.
 */
export function decodeApplianceResponse(
  body: Uint8Array | string,
  options?: ApplianceDecodeOptions,
): ApplianceBlocks {
  return addon.decodeApplianceResponse(body, options) as ApplianceBlocks;
}

/**
 * Encodes `bytes` (a whole number, 1..512, of `blockSize`-byte blocks; blockSize 1..1,024)
 * as `{"entropy":["...",...],"extensions":[]}`. Synchronous.
 * @throws {CodecError} `EINVAL` for input that is not 1..512 whole blocks.
 */
export function encodeApplianceResponse(bytes: Uint8Array, blockSize: number, options?: CodecOptions): Buffer {
  return addon.encodeApplianceResponse(bytes, blockSize, options) as Buffer;
}

/**
 * Like {@link decodeEntropyResponse}, but writes the N × 1,024 bytes into `target` (e.g. a
 * pool slot or a reused buffer) and returns how many were written: no allocation, so no
 * fresh pages to fault in. On error the target's contents are unspecified.
 * @throws {CodecError} as decodeEntropyResponse; `EINVAL` when `target` is too small.
 */
export function decodeEntropyResponseInto(body: Uint8Array | string, target: Uint8Array, options?: CodecOptions): number {
  return addon.decodeEntropyResponseInto(body, target, options) as number;
}

/**
 * Like {@link encodeEntropyResponse}, but writes the body into `target` (at least
 * {@link entropyResponseLength}(N) bytes) and returns its length.
 * @throws {CodecError} `EINVAL` for bad input or a target that is too small.
 */
export function encodeEntropyResponseInto(bytes: Uint8Array, target: Uint8Array, options?: CodecOptions): number {
  return addon.encodeEntropyResponseInto(bytes, target, options) as number;
}

/** Exact byte length of the entropy response body for `blocks` blocks (1..512). */
export function entropyResponseLength(blocks: number): number {
  return addon.entropyResponseLength(blocks) as number;
}

/** The base64 kernels the codec uses on this host unless told `simd: false`. */
export function codecKernel(): 'avx2' | 'scalar' {
  return addon.codecKernel as 'avx2' | 'scalar';
}
