// Sequence files for the battery, read as a stream: raw binary (most significant bit of
// each byte first, NIST's input mode 1) or ASCII '0'/'1' characters with any whitespace
// (NIST's mode 0, e.g. data.e). Binary sequences start where NIST's assess starts them: it
// reads whole 4-byte words, so a sequence whose length is not a multiple of 32 bits leaves
// the rest of its last word unread and the next sequence starts on the next word
// (`contiguous` reads them back to back instead). A file of any size is tested in chunks of whole sequences,
// so memory stays near one chunk (about 16 MiB of packed bits) plus the P-values, never
// the file: a 1 GB ASCII file needs about 20 MB.
import fs from 'node:fs';
import fsp from 'node:fs/promises';

import { assembleResult, resolveParams, resolveTests, runNative, StsInputError } from './battery.js';
import type { NativeBatteryResult } from './native.js';
import type { BatteryProgress, BatteryResult, StsParams, TestName } from './types.js';

export type SequenceFormat = 'binary' | 'ascii';

/** NIST's recommended sequence length, and the default when the file is long enough. */
export const DEFAULT_SEQUENCE_BITS = 1_000_000;
/** Packed bits per chunk handed to the native battery (16 MiB). */
const CHUNK_BITS = 1 << 27;
const READ_BYTES = 1 << 20;

export interface SequenceFileOptions {
  /** 'binary', 'ascii', or 'auto' (default): ASCII when the first 64 KiB hold only 0, 1 and whitespace. */
  format?: SequenceFormat | 'auto';
  /** Bits per sequence (default 1,000,000, or the file's bits / streams when that is less). */
  bits?: number;
  /** Number of sequences (default: as many whole sequences as the file holds). */
  streams?: number;
  /** Bits per chunk held in memory (default 2^27 = 16 MiB packed); whole sequences, at least 8 per chunk. */
  chunkBits?: number;
  /**
   * Binary only: read sequences back to back. By default each sequence starts on a 32-bit
   * word, as NIST's assess reads them (the rest of a sequence's last word is skipped).
   */
  contiguous?: boolean;
}

export interface SequenceFileLayout {
  format: SequenceFormat;
  /** Usable bits in the file (ASCII: the count of 0/1 characters). */
  totalBits: number;
  bits: number;
  streams: number;
  /** Bits from one sequence's start to the next in the file: `bits`, or `bits` rounded up to 32 (binary, assess's reading). */
  strideBits: number;
}

export interface SequenceChunk {
  /** Index of the chunk's first sequence. */
  firstStream: number;
  streams: number;
  /** streams x bits bits, packed MSB first. */
  data: Buffer;
  bitCount: number;
}

function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

function describeByte(c: number): string {
  const hex = `0x${c.toString(16).padStart(2, '0')}`;
  return c >= 0x21 && c < 0x7f ? `'${String.fromCharCode(c)}' (${hex})` : hex;
}

async function openForReading(path: string): Promise<fsp.FileHandle> {
  try {
    const handle = await fsp.open(path, 'r');
    const stat = await handle.stat();
    if (!stat.isFile()) {
      await handle.close();
      throw new StsInputError(`${path}: not a regular file`);
    }
    return handle;
  } catch (err) {
    if (err instanceof StsInputError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new StsInputError(`${path}: ${code === 'ENOENT' ? 'no such file' : code ?? (err as Error).message}`);
  }
}

async function detectFormat(handle: fsp.FileHandle): Promise<SequenceFormat> {
  const head = Buffer.alloc(1 << 16);
  const { bytesRead } = await handle.read(head, 0, head.length, 0);
  if (bytesRead === 0) return 'binary';
  for (let i = 0; i < bytesRead; i++) {
    const c = head[i]!;
    if (c !== 0x30 && c !== 0x31 && !isSpace(c)) return 'binary';
  }
  return 'ascii';
}

/** Counts the 0/1 characters of an ASCII file, rejecting any other non-whitespace byte. */
async function countAsciiBits(path: string): Promise<number> {
  let bits = 0;
  let offset = 0;
  for await (const chunk of fs.createReadStream(path, { highWaterMark: READ_BYTES }) as AsyncIterable<Buffer>) {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === 0x30 || c === 0x31) bits++;
      else if (!isSpace(c)) {
        throw new StsInputError(`${path}: byte ${describeByte(c)} at offset ${offset + i} is not 0, 1 or whitespace (ASCII format)`);
      }
    }
    offset += chunk.length;
  }
  return bits;
}

/** Checks the file and works out format, sequence length and count (see SequenceFileOptions). */
export async function inspectSequenceFile(path: string, options: SequenceFileOptions = {}): Promise<SequenceFileLayout> {
  const handle = await openForReading(path);
  let format: SequenceFormat;
  let size: number;
  try {
    size = (await handle.stat()).size;
    format = options.format === undefined || options.format === 'auto' ? await detectFormat(handle) : options.format;
  } finally {
    await handle.close();
  }
  if (format !== 'binary' && format !== 'ascii') throw new StsInputError(`unknown format '${String(format)}' (binary or ascii)`);
  const totalBits = format === 'binary' ? size * 8 : await countAsciiBits(path);
  if (totalBits === 0) throw new StsInputError(`${path}: no bits to test (empty file)`);
  const { bits: wantBits, streams: wantStreams } = options;
  if (wantBits !== undefined && (!Number.isSafeInteger(wantBits) || wantBits < 1)) {
    throw new StsInputError('the sequence length (--bits) must be a positive integer');
  }
  if (wantStreams !== undefined && (!Number.isSafeInteger(wantStreams) || wantStreams < 1)) {
    throw new StsInputError('the number of sequences (--streams) must be a positive integer');
  }
  // Without --bits: NIST's 1,000,000, or less when the file cannot hold M of them.
  const wordAligned = format === 'binary' && !options.contiguous;
  const strideOf = (n: number) => (wordAligned ? Math.ceil(n / 32) * 32 : n);
  const bits = wantBits ?? defaultBits(totalBits, wantStreams ?? 1, strideOf);
  const strideBits = strideOf(bits);
  const bitsFor = (m: number) => (m - 1) * strideBits + bits;
  const streams = wantStreams ?? (bits > totalBits ? 0 : Math.floor((totalBits - bits) / strideBits) + 1);
  if (bits < 1 || streams < 1 || bitsFor(streams) > totalBits) {
    throw new StsInputError(
      `${path}: holds ${totalBits} bits; ${wantStreams ?? 1} sequence(s) of ${bits} bits need ${bitsFor(wantStreams ?? 1)}`,
    );
  }
  return { format, totalBits, bits, streams, strideBits };
}

/** NIST's 1,000,000 bits, or the longest length of which the file holds `streams` sequences. */
function defaultBits(totalBits: number, streams: number, strideOf: (n: number) => number): number {
  let bits = Math.min(DEFAULT_SEQUENCE_BITS, Math.floor(totalBits / streams));
  // Word-aligned sequences take up to 31 bits more each: shorten until they fit.
  while (bits > 1 && (streams - 1) * strideOf(bits) + bits > totalBits) bits--;
  return bits;
}

/** Sequences per chunk: about chunkBits bits, a multiple of 8 sequences so chunks start on a byte. */
function streamsPerChunk(bits: number, streams: number, chunkBits = CHUNK_BITS): number {
  const fit = Math.max(1, Math.floor(chunkBits / bits));
  const aligned = fit >= 8 ? fit - (fit % 8) : 8;
  return Math.min(streams, aligned);
}

/**
 * Reads the file's first streams x bits bits as packed chunks of whole sequences, one
 * chunk in memory at a time.
 */
export async function* readSequenceFile(path: string, options: SequenceFileOptions = {}): AsyncGenerator<SequenceChunk> {
  const layout = await inspectSequenceFile(path, options);
  yield* readChunks(path, layout, options.chunkBits);
}

async function* readChunks(path: string, layout: SequenceFileLayout, chunkBits?: number): AsyncGenerator<SequenceChunk> {
  const perChunk = streamsPerChunk(layout.bits, layout.streams, chunkBits);
  if (layout.format === 'binary') {
    const handle = await openForReading(path);
    const { bits, strideBits } = layout;
    try {
      for (let first = 0; first < layout.streams; first += perChunk) {
        const streams = Math.min(perChunk, layout.streams - first);
        const bitCount = streams * bits;
        // first x stride is a multiple of 8 (perChunk is, or this is the only chunk).
        const start = (first * strideBits) / 8;
        const raw = Buffer.alloc(Math.ceil(((streams - 1) * strideBits + bits) / 8));
        let got = 0;
        while (got < raw.length) {
          const { bytesRead } = await handle.read(raw, got, raw.length - got, start + got);
          if (bytesRead === 0) throw new StsInputError(`${path}: file ended early (was it truncated while reading?)`);
          got += bytesRead;
        }
        const data = strideBits === bits ? raw : packStreams(raw, streams, bits, strideBits);
        const tail = bitCount % 8;
        if (tail) data[data.length - 1]! &= (0xff << (8 - tail)) & 0xff;
        yield { firstStream: first, streams, data, bitCount };
      }
    } finally {
      await handle.close();
    }
    return;
  }

  // ASCII: pack characters into the current chunk's buffer as they stream by.
  let first = 0;
  let streams = Math.min(perChunk, layout.streams);
  let bitCount = streams * layout.bits;
  let data = Buffer.alloc(Math.ceil(bitCount / 8));
  let bit = 0;
  let offset = 0;
  for await (const piece of fs.createReadStream(path, { highWaterMark: READ_BYTES }) as AsyncIterable<Buffer>) {
    for (let i = 0; i < piece.length; i++) {
      const c = piece[i]!;
      if (c === 0x31) data[bit >> 3]! |= 0x80 >> (bit & 7);
      else if (c !== 0x30) {
        if (isSpace(c)) continue;
        throw new StsInputError(`${path}: byte ${describeByte(c)} at offset ${offset + i} is not 0, 1 or whitespace (ASCII format)`);
      }
      if (++bit === bitCount) {
        yield { firstStream: first, streams, data, bitCount };
        first += streams;
        if (first >= layout.streams) return;
        streams = Math.min(perChunk, layout.streams - first);
        bitCount = streams * layout.bits;
        data = Buffer.alloc(Math.ceil(bitCount / 8));
        bit = 0;
      }
    }
    offset += piece.length;
  }
  throw new StsInputError(`${path}: file ended early (was it changed while reading?)`);
}

/**
 * Packs `streams` sequences of `bits` bits that start every `strideBits` bits of `raw` (a
 * multiple of 8) into one back-to-back buffer, as the battery takes them.
 */
function packStreams(raw: Buffer, streams: number, bits: number, strideBits: number): Buffer {
  const out = Buffer.alloc(Math.ceil((streams * bits) / 8));
  const whole = bits >> 3;
  for (let s = 0; s < streams; s++) {
    const from = (s * strideBits) >> 3;
    const to = s * bits; // bit offset in out
    const shift = to & 7;
    const at = to >> 3;
    const bytes = whole + (bits & 7 ? 1 : 0);
    if (shift === 0) {
      // Bits past the sequence in its last byte are overwritten by the next sequence, or masked by the caller.
      raw.copy(out, at, from, from + bytes);
      if (bits & 7 && s + 1 < streams) out[at + whole]! &= (0xff << (8 - (bits & 7))) & 0xff;
      continue;
    }
    // Not byte-aligned in out: each source byte straddles two output bytes.
    for (let i = 0; i < bytes; i++) {
      let b = raw[from + i]!;
      if (i === whole) b &= (0xff << (8 - (bits & 7))) & 0xff; // drop bits past the sequence
      out[at + i]! |= b >> shift;
      if (at + i + 1 < out.length) out[at + i + 1]! |= (b << (8 - shift)) & 0xff;
    }
  }
  return out;
}

export interface RunFileOptions extends SequenceFileOptions {
  params?: StsParams;
  tests?: readonly TestName[];
  /** Worker threads (default 1; 0 = every core). */
  threads?: number;
  signal?: AbortSignal;
  onProgress?: (progress: BatteryProgress) => void;
  /** Called once the file has been checked, before any test runs. */
  onLayout?: (layout: SequenceFileLayout) => void;
}

/** The battery on a sequence file of any size (the library form of `qentropy sts`). */
export async function runBatteryOnFile(path: string, options: RunFileOptions = {}): Promise<BatteryResult & { format: SequenceFormat }> {
  const params = resolveParams(options.params);
  const tests = resolveTests(options.tests);
  const threads = options.threads ?? 1;
  if (!Number.isSafeInteger(threads) || threads < 0 || threads > 1024) {
    throw new StsInputError('threads must be an integer from 0 to 1024');
  }
  const layout = await inspectSequenceFile(path, options);
  options.onLayout?.(layout);
  const parts: NativeBatteryResult[] = [];
  const onProgress = options.onProgress;
  for await (const chunk of readChunks(path, layout, options.chunkBits)) {
    const done = chunk.firstStream;
    parts.push(
      await runNative(chunk.data, {
        streams: chunk.streams,
        bitsPerStream: layout.bits,
        bitCount: chunk.bitCount,
        params,
        tests,
        threads,
        summarize: false,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(onProgress
          ? { onProgress: (completed: number) => onProgress({ completed: done + completed, total: layout.streams }) }
          : {}),
      }),
    );
  }
  return { ...assembleResult(parts, params, layout.bits), format: layout.format };
}
