// The native base64 block codec against Node's own JSON.parse and Buffer base64: random
// round trips, every error class with its block index, both kernel paths, and a fuzz-style
// loop of mutated bodies judged by an independent strict reference decoder.
import { randomBytes } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import {
  codecKernel,
  decodeApplianceResponse,
  decodeEntropyResponse,
  decodeEntropyResponseInto,
  encodeApplianceResponse,
  encodeEntropyResponse,
  encodeEntropyResponseInto,
  entropyResponseLength,
  isCodecError,
  type CodecError,
} from '../src/native/codec.js';

// ---- an independent strict reference: JSON.parse + Buffer base64 + canonical re-encode ----

/** RFC 4648 §4 padded, canonical base64, or null. */
function strictBase64(s: string): Buffer | null {
  if (s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) return null;
  const bytes = Buffer.from(s, 'base64');
  return bytes.toString('base64') === s ? bytes : null; // rejects non-zero pad bits
}

/** Keys of the top-level object, in order, duplicates kept (JSON.parse hides them). */
function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const literal = text.slice(i, j + 1);
      let k = j + 1;
      while (/[ \t\n\r]/.test(text[k] ?? '')) k++;
      if (depth === 1 && text[k] === ':') keys.push(JSON.parse(literal) as string);
      i = j;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return keys;
}

function hasDuplicate(keys: string[], names: string[]): boolean {
  return names.some((n) => keys.filter((k) => k === n).length > 1);
}

function referenceEntropy(body: Buffer): Buffer | null {
  const text = body.toString('utf8');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  if (hasDuplicate(topLevelKeys(text), ['random', 'size'])) return null;
  const { random, size } = v as { random?: unknown; size?: unknown };
  if (!Array.isArray(random) || random.length < 1 || random.length > 512) return null;
  if (typeof size !== 'number' || !Number.isInteger(size) || size !== random.length) return null;
  const blocks: Buffer[] = [];
  for (const s of random) {
    const b = typeof s === 'string' ? strictBase64(s) : null;
    if (b === null || b.length !== 1024) return null;
    blocks.push(b);
  }
  return Buffer.concat(blocks);
}

function referenceAppliance(body: Buffer): Buffer | null {
  const text = body.toString('utf8');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  if (hasDuplicate(topLevelKeys(text), ['entropy', 'extensions'])) return null;
  const { entropy, extensions } = v as { entropy?: unknown; extensions?: unknown };
  if (extensions !== undefined && !Array.isArray(extensions)) return null;
  if (!Array.isArray(entropy) || entropy.length < 1 || entropy.length > 512) return null;
  const blocks: Buffer[] = [];
  for (const s of entropy) {
    const b = typeof s === 'string' ? strictBase64(s) : null;
    if (b === null || b.length < 1 || b.length > 1024 || b.length !== (blocks[0]?.length ?? b.length)) return null;
    blocks.push(b);
  }
  return Buffer.concat(blocks);
}

// ---- helpers ----

function nodeBody(bytes: Buffer): string {
  const random: string[] = [];
  for (let i = 0; i < bytes.length; i += 1024) random.push(bytes.subarray(i, i + 1024).toString('base64'));
  return JSON.stringify({ random, size: random.length });
}

function codecError(fn: () => unknown): CodecError {
  try {
    fn();
  } catch (e) {
    if (isCodecError(e)) return e;
    throw e;
  }
  throw new Error('expected a CodecError');
}

/** Decodes with both kernel paths; they must agree. Returns the bytes or the error. */
function decodeBoth(body: Buffer | string): Buffer | CodecError {
  const run = (simd: boolean): Buffer | CodecError => {
    try {
      return decodeEntropyResponse(body, { simd });
    } catch (e) {
      if (isCodecError(e)) return e;
      throw e; // anything else (a TypeError, a crash) fails the test
    }
  };
  const a = run(true);
  const b = run(false);
  if (Buffer.isBuffer(a) || Buffer.isBuffer(b)) {
    expect(Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b)).toBe(true);
  } else {
    expect([a.code, a.blockIndex, a.position]).toEqual([b.code, b.blockIndex, b.position]);
  }
  return a;
}

const block = (): string => randomBytes(1024).toString('base64');
const bodyOf = (blocks: string[], size: string | number = blocks.length): string =>
  `{"random":[${blocks.map((b) => `"${b}"`).join(',')}],"size":${size}}`;

// ---- tests ----

describe('codec kernels', () => {
  it('reports the kernel in use', () => {
    expect(['avx2', 'scalar']).toContain(codecKernel());
  });
});

describe('decodeEntropyResponse', () => {
  it('matches JSON.parse + Buffer.from on random bodies of every size class', () => {
    for (const n of [1, 2, 3, 17, 100, 511, 512]) {
      const bytes = randomBytes(n * 1024);
      const body = nodeBody(bytes);
      expect(decodeEntropyResponse(Buffer.from(body)).equals(bytes)).toBe(true);
      expect(decodeEntropyResponse(body).equals(bytes)).toBe(true);
      expect(decodeEntropyResponse(Buffer.from(body), { simd: false }).equals(bytes)).toBe(true);
    }
  });

  it('accepts what JSON encoders legally write: key order, whitespace, escapes, unknown keys', () => {
    const bytes = randomBytes(2048);
    const [b0, b1] = [bytes.subarray(0, 1024).toString('base64'), bytes.subarray(1024).toString('base64')];
    const php = (s: string) => s.replaceAll('/', '\\/'); // PHP's json_encode default
    const unicode = (s: string) => s.replaceAll('/', '\\u002F').replaceAll('+', '\\u002b');
    const bodies = [
      JSON.stringify({ size: 2, random: [b0, b1] }),
      JSON.stringify({ random: [b0, b1], size: 2 }, null, 2),
      `{"random":["${php(b0)}","${unicode(b1)}"],"size":2}`,
      `{"meta":{"a":[1,2,{"b":"x\\"]}"}],"c":null},"random":["${b0}","${b1}"],"t":true,"size":2.0,"u":"\\ud83d\\ude00é"}`,
    ];
    for (const body of bodies) {
      expect(referenceEntropy(Buffer.from(body))?.equals(bytes)).toBe(true);
      const out = decodeBoth(Buffer.from(body));
      expect(Buffer.isBuffer(out) && out.equals(bytes)).toBe(true);
    }
  });

  it('names the block and the reason for every error class', () => {
    const b = [block(), block(), block()];
    const cases: Array<[string, string, number | undefined]> = [
      [bodyOf([b[0]!, b[1]!.slice(0, 1364), b[2]!]), 'EBLOCKSIZE', 1],
      [bodyOf([b[0]!, b[1]!, randomBytes(1023).toString('base64')]), 'EBLOCKSIZE', 2],
      [bodyOf([b[0]!, `${b[1]!.slice(0, 100)}!${b[1]!.slice(101)}`, b[2]!]), 'EBASE64', 1],
      [bodyOf([`${b[0]!.slice(0, 1366)}=A`, b[1]!]), 'EPADDING', 0],
      [bodyOf([b[0]!, `${b[1]!.slice(0, 1364)}AB==`]), 'EPADDING', 1], // 'B' leaves non-zero pad bits
      [bodyOf([b[0]!, b[1]!.slice(0, 1366)]), 'EPADDING', 1],
      [bodyOf([b[0]!], 2), 'ESIZE', undefined],
      [bodyOf([b[0]!], 1.5), 'ESIZE', undefined],
      [bodyOf([b[0]!], '"1"'), 'ESIZE', undefined],
      [`{"random":["${b[0]!}"]}`, 'ESIZE', undefined],
      ['{"random":[],"size":0}', 'ECOUNT', undefined],
      [bodyOf(Array.from({ length: 513 }, () => b[0]!)), 'ECOUNT', 512],
      [`${bodyOf([b[0]!])} x`, 'ESHAPE', undefined],
      [`{"random":["${b[0]!}"],"random":["${b[0]!}"],"size":1}`, 'ESHAPE', undefined],
      [`["${b[0]!}"]`, 'ESHAPE', undefined],
      ['', 'ESHAPE', undefined],
    ];
    for (const [body, code, blockIndex] of cases) {
      const e = decodeBoth(Buffer.from(body));
      expect(Buffer.isBuffer(e)).toBe(false);
      const err = e as CodecError;
      expect(err.code, body.slice(0, 60)).toBe(code);
      expect(err.blockIndex).toBe(blockIndex);
      if (blockIndex !== undefined) expect(err.message).toContain(`block ${blockIndex}`);
      expect(referenceEntropy(Buffer.from(body))).toBeNull();
    }
    const bad = codecError(() => decodeEntropyResponse(bodyOf([b[0]!, `${b[1]!.slice(0, 100)}!${b[1]!.slice(101)}`])));
    expect(bad.position).toBe(100);
    expect(bad.message).toMatch(/block 1: non-base64 character '!'.*position 100/);
  });

  it('rejects wrong argument types with a TypeError', () => {
    expect(() => decodeEntropyResponse(42 as unknown as string)).toThrow(TypeError);
  });

  it('agrees with the strict reference on mutated bodies (fuzz-style)', () => {
    const bytes = randomBytes(3 * 1024);
    const seeds = [
      Buffer.from(nodeBody(bytes)),
      Buffer.from(JSON.stringify({ size: 3, x: { y: ['\\', 1.5e3] }, random: JSON.parse(nodeBody(bytes)).random }, null, 1)),
      Buffer.from(nodeBody(bytes).replaceAll('/', '\\/')),
    ];
    const special = Buffer.from('"\\=/+,:[]{}0123456789 eE-.u');
    let rng = 0x12345678;
    const next = (n: number) => {
      rng = (Math.imul(rng, 1103515245) + 12345) >>> 0;
      return (rng >>> 8) % n;
    };
    let accepted = 0;
    let rejected = 0;
    for (let round = 0; round < 4000; round++) {
      const seed = seeds[round % seeds.length]!;
      let body = Buffer.from(seed);
      for (let e = 1 + next(3); e > 0; e--) {
        const pos = next(body.length + 1);
        const byte = next(2) ? special[next(special.length)]! : next(256);
        const op = next(3);
        if (op === 0 && pos < body.length) body[pos] = byte;
        else if (op === 1) body = Buffer.concat([body.subarray(0, pos), Buffer.of(byte), body.subarray(pos)]);
        else if (pos < body.length) body = Buffer.concat([body.subarray(0, pos), body.subarray(pos + 1)]);
      }
      const expected = referenceEntropy(body);
      const got = decodeBoth(body);
      if (expected === null) {
        expect(Buffer.isBuffer(got), body.toString('latin1').slice(0, 80)).toBe(false);
        rejected++;
      } else {
        expect(Buffer.isBuffer(got) && got.equals(expected), body.toString('latin1').slice(0, 80)).toBe(true);
        accepted++;
      }
    }
    expect(accepted).toBeGreaterThan(0);
    expect(rejected).toBeGreaterThan(0);
  });
});

describe('encodeEntropyResponse', () => {
  it('produces exactly what JSON.stringify + toString("base64") produce', () => {
    for (const n of [1, 2, 5, 512]) {
      const bytes = randomBytes(n * 1024);
      const body = encodeEntropyResponse(bytes);
      expect(Buffer.isBuffer(body)).toBe(true);
      expect(body.toString()).toBe(nodeBody(bytes));
      expect(encodeEntropyResponse(bytes, { simd: false }).equals(body)).toBe(true);
      expect(decodeEntropyResponse(body).equals(bytes)).toBe(true);
    }
  });

  it('rejects input that is not 1..512 whole blocks', () => {
    for (const len of [0, 1000, 1025, 513 * 1024]) {
      expect(codecError(() => encodeEntropyResponse(Buffer.alloc(len))).code).toBe('EINVAL');
    }
  });
});

describe('into a caller buffer', () => {
  it('decodes and encodes into reused targets, same bytes as the allocating calls', () => {
    const target = Buffer.alloc(512 * 1024 + 10, 0xee);
    const out = Buffer.alloc(entropyResponseLength(512));
    for (const n of [1, 3, 512]) {
      const bytes = randomBytes(n * 1024);
      expect(entropyResponseLength(n)).toBe(nodeBody(bytes).length);
      const written = encodeEntropyResponseInto(bytes, out);
      expect(out.subarray(0, written).toString()).toBe(nodeBody(bytes));
      expect(decodeEntropyResponseInto(out.subarray(0, written), target)).toBe(n * 1024);
      expect(target.subarray(0, n * 1024).equals(bytes)).toBe(true);
      expect(decodeEntropyResponseInto(nodeBody(bytes), target, { simd: false })).toBe(n * 1024);
      expect(target.subarray(0, n * 1024).equals(bytes)).toBe(true);
    }
    expect(target.subarray(512 * 1024).every((b) => b === 0xee)).toBe(true); // nothing past the end
  });

  it('rejects targets that are too small', () => {
    const bytes = randomBytes(2048);
    expect(codecError(() => decodeEntropyResponseInto(nodeBody(bytes), Buffer.alloc(2047))).code).toBe('EINVAL');
    expect(codecError(() => encodeEntropyResponseInto(bytes, Buffer.alloc(entropyResponseLength(2) - 1))).code).toBe(
      'EINVAL',
    );
    expect(() => entropyResponseLength(0)).toThrow(RangeError);
  });
});

describe('appliance shape', () => {
  it('round-trips every block size class and matches Node', () => {
    for (const blockSize of [1, 2, 3, 4, 5, 31, 32, 33, 47, 48, 49, 100, 1000, 1023, 1024]) {
      const count = 1 + (blockSize % 7);
      const bytes = randomBytes(blockSize * count);
      const body = encodeApplianceResponse(bytes, blockSize);
      const entropy: string[] = [];
      for (let i = 0; i < count; i++) entropy.push(bytes.subarray(i * blockSize, (i + 1) * blockSize).toString('base64'));
      expect(body.toString()).toBe(JSON.stringify({ entropy, extensions: [] }));
      expect(encodeApplianceResponse(bytes, blockSize, { simd: false }).equals(body)).toBe(true);
      for (const simd of [true, false]) {
        const out = decodeApplianceResponse(body, { simd, blockSize, blockCount: count });
        expect(out.blockSize).toBe(blockSize);
        expect(out.blockCount).toBe(count);
        expect(out.data.equals(bytes)).toBe(true);
      }
    }
  });

  it('rejects mixed block sizes, unexpected sizes and counts, naming the block', () => {
    const body = JSON.stringify({ extensions: [{ k: 'v' }], entropy: ['AAAA', 'AAAA', 'AAA='] });
    const e = codecError(() => decodeApplianceResponse(body));
    expect([e.code, e.blockIndex]).toEqual(['EBLOCKSIZE', 2]);
    expect(codecError(() => decodeApplianceResponse(body.replace('AAA=', 'AAAA'), { blockSize: 2 })).code).toBe(
      'EBLOCKSIZE',
    );
    expect(codecError(() => decodeApplianceResponse(body.replace('AAA=', 'AAAA'), { blockCount: 2 })).code).toBe(
      'ECOUNT',
    );
    expect(codecError(() => decodeApplianceResponse('{"entropy":["AAAA"],"extensions":{}}')).code).toBe('ESHAPE');
    expect(codecError(() => encodeApplianceResponse(Buffer.alloc(10), 3)).code).toBe('EINVAL');
    expect(() => encodeApplianceResponse(Buffer.alloc(10), 0)).toThrow(RangeError);
  });

  it('agrees with the strict reference on mutated appliance bodies', () => {
    const bytes = randomBytes(4 * 100);
    const seed = encodeApplianceResponse(bytes, 100);
    let rng = 99;
    const next = (n: number) => {
      rng = (Math.imul(rng, 1103515245) + 12345) >>> 0;
      return (rng >>> 8) % n;
    };
    const special = Buffer.from('"\\=/+,:[]{}0 ');
    for (let round = 0; round < 1500; round++) {
      const body = Buffer.from(seed);
      const pos = next(body.length);
      body[pos] = next(2) ? special[next(special.length)]! : next(256);
      const expected = referenceAppliance(body);
      for (const simd of [true, false]) {
        let got: Buffer | null = null;
        try {
          got = decodeApplianceResponse(body, { simd }).data;
        } catch (e) {
          if (!isCodecError(e)) throw e;
        }
        if (expected === null) expect(got).toBeNull();
        else expect(got?.equals(expected)).toBe(true);
      }
    }
  });
});
