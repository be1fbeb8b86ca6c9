// Base64 block codec benchmark: a 512-block entropy response (512 KiB of data, ~686 KiB
// of JSON), decoded and encoded by the native codec and by what Node clients do today, with
// Buffer.copy of the same byte count as the speed-of-memory ceiling. Run:
//   npm run build:ts && npm run bench:codec        (node --expose-gc benchmarks/codec/run.js)
// Uses the built dist/ (falls back to the addon directly when dist/ is absent); honours
// QENTROPY_ADDON_PATH like the library does. Prints MB/s of decoded bytes (1 MB = 10^6 B).
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function loadCodec() {
  try {
    return await import(path.join(root, 'dist/src/native/codec.js'));
  } catch (e) {
    if (e?.code !== 'ERR_MODULE_NOT_FOUND') throw e;
    const require = createRequire(import.meta.url);
    const addon = process.env.QENTROPY_ADDON_PATH
      ? require(path.resolve(process.env.QENTROPY_ADDON_PATH))
      : require('node-gyp-build')(root);
    console.log('(dist/ not built: using the addon directly)');
    return { ...addon, codecKernel: () => addon.codecKernel };
  }
}

const codec = await loadCodec();
const BLOCKS = 512;
const BYTES = BLOCKS * 1024;
const data = randomBytes(BYTES);
const bodyString = JSON.stringify({
  random: Array.from({ length: BLOCKS }, (_, i) => data.subarray(i * 1024, (i + 1) * 1024).toString('base64')),
  size: BLOCKS,
});
const bodyBuffer = Buffer.from(bodyString);
const copyTarget = Buffer.allocUnsafe(BYTES);
const decodeTarget = Buffer.allocUnsafe(BYTES);
const encodeTarget = Buffer.allocUnsafe(codec.entropyResponseLength(BLOCKS));

// What every client does today.
function nodeDecode(text) {
  const parsed = JSON.parse(text);
  return Buffer.concat(parsed.random.map((s) => Buffer.from(s, 'base64')));
}
function nodeEncode(bytes) {
  const random = [];
  for (let i = 0; i < bytes.length; i += 1024) random.push(bytes.subarray(i, i + 1024).toString('base64'));
  return JSON.stringify({ random, size: random.length });
}

// Correctness first: every contender must produce the same thing.
if (!codec.decodeEntropyResponse(bodyBuffer).equals(data)) throw new Error('decode mismatch');
if (!nodeDecode(bodyString).equals(data)) throw new Error('node decode mismatch');
if (codec.encodeEntropyResponse(data).toString() !== bodyString) throw new Error('encode mismatch');

let sink = 0;
/**
 * MB/s of the best of 9 rounds of ~100 ms each (after 2 warm-up rounds). The best round, not
 * the median, because on a shared machine other processes only ever make a round slower.
 */
function measure(fn) {
  const rounds = [];
  for (let r = 0; r < 11; r++) {
    if (globalThis.gc) globalThis.gc();
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0;
    do {
      const out = fn();
      sink += out.length;
      n++;
      elapsed = Number(process.hrtime.bigint() - start) / 1e9;
    } while (elapsed < 0.1);
    if (r >= 2) rounds.push((n * BYTES) / elapsed / 1e6); // first two rounds: warm-up
  }
  return Math.max(...rounds);
}

const results = {
  copy: measure(() => (bodyBuffer.copy(copyTarget, 0, 0, BYTES), copyTarget)),
  freshBuffer: measure(() => { const b = Buffer.allocUnsafeSlow(BYTES); bodyBuffer.copy(b, 0, 0, BYTES); return b; }),
  decodeOurs: measure(() => codec.decodeEntropyResponse(bodyBuffer)),
  decodeOursInto: measure(() => (codec.decodeEntropyResponseInto(bodyBuffer, decodeTarget), decodeTarget)),
  decodeOursString: measure(() => codec.decodeEntropyResponse(bodyString)),
  decodeOursScalar: measure(() => codec.decodeEntropyResponse(bodyBuffer, { simd: false })),
  decodeNode: measure(() => nodeDecode(bodyString)),
  encodeOurs: measure(() => codec.encodeEntropyResponse(data)),
  encodeOursInto: measure(() => (codec.encodeEntropyResponseInto(data, encodeTarget), encodeTarget)),
  encodeOursScalar: measure(() => codec.encodeEntropyResponse(data, { simd: false })),
  encodeNode: measure(() => nodeEncode(data)),
};

const fmt = (v) => v.toFixed(0).padStart(7);
const ratio = (a, b) => `${(a / b).toFixed(2)}x`;
const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
console.log(`codec benchmark: ${BLOCKS} blocks (${BYTES} bytes decoded, ${bodyBuffer.length} bytes of JSON)`);
console.log(`${cpu}, ${os.cpus().length} logical CPUs, Node ${process.version}, kernel: ${codec.codecKernel()}`);
console.log('MB/s of decoded bytes (best of 9 rounds):');
console.log(`  Buffer.copy (memory ceiling)                 ${fmt(results.copy)}`);
console.log(`  decode  ours (Buffer body)                   ${fmt(results.decodeOurs)}`);
console.log(`  decode  ours, into a reused target           ${fmt(results.decodeOursInto)}`);
console.log(`  decode  ours (string body)                   ${fmt(results.decodeOursString)}`);
console.log(`  decode  ours, scalar kernels                 ${fmt(results.decodeOursScalar)}`);
console.log(`  decode  JSON.parse + Buffer.from + concat    ${fmt(results.decodeNode)}`);
console.log(`  encode  ours                                 ${fmt(results.encodeOurs)}`);
console.log(`  encode  ours, into a reused target           ${fmt(results.encodeOursInto)}`);
console.log(`  encode  ours, scalar kernels                 ${fmt(results.encodeOursScalar)}`);
console.log(`  encode  toString('base64') + JSON.stringify  ${fmt(results.encodeNode)}`);
console.log('ratios:');
console.log(`  decode ours / Node path:   ${ratio(results.decodeOurs, results.decodeNode)}   (target >= 10x)`);
console.log(`  decode ours / Buffer.copy: ${ratio(results.decodeOurs, results.copy)}   (target >= 0.25x)`);
console.log(`  decode ours into a reused target / Buffer.copy: ${ratio(results.decodeOursInto, results.copy)}`);
console.log(`  encode ours / Node path:   ${ratio(results.encodeOurs, results.encodeNode)}   (target >= 10x)`);
console.log(`  encode ours / Buffer.copy: ${ratio(results.encodeOurs, results.copy)}   (target >= 0.25x)`);
console.log(`  encode ours into a reused target / Buffer.copy: ${ratio(results.encodeOursInto, results.copy)}`);
console.log(`  (a fresh ${BYTES}-byte Buffer, written once: ${fmt(results.freshBuffer)} MB/s: the page-fault cost every`);
console.log('   allocating call pays, Node path included)');
if (sink === 0) console.log('');
