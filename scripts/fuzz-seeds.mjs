// Writes the seed corpus of the libFuzzer targets (native/fuzz/corpus/TARGET/), a few
// small valid and near-valid inputs each, deterministic so the committed files can be
// regenerated: node scripts/fuzz-seeds.mjs (needs dist/ and the built addon).
// docs/fuzzing.md says how the targets use them.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { encodeApplianceResponse, encodeEntropyResponse } from '../dist/src/native/codec.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'native', 'fuzz', 'corpus');

/** `n` deterministic pseudo-random bytes: SHA-256 of label + counter, concatenated. */
function bytes(label, n) {
  const out = Buffer.alloc(n);
  for (let i = 0; i * 32 < n; i++) createHash('sha256').update(`${label} ${i}`).digest().copy(out, i * 32);
  return out;
}

const seeds = {
  fuzz_codec: {
    'entropy-1-block.json': encodeEntropyResponse(bytes('codec', 1024)),
    'entropy-2-blocks.json': encodeEntropyResponse(bytes('codec2', 2048)),
    'appliance-32.json': encodeApplianceResponse(bytes('appliance', 256), 32),
    'entropy-bad-char.json': Buffer.from(encodeEntropyResponse(bytes('codec3', 1024)).toString().replace(/[A-Za-z]/, '!')),
  },
  // Text with whitespace, text with a bad byte, raw bytes.
  fuzz_sts_input: {
    'ascii.txt': Buffer.from('0101110\n1 0\t1\r\n11100010 01011'),
    'ascii-bad.txt': Buffer.from('0101 01x1\n'),
    'bytes.bin': bytes('sts-input', 200),
  },
  // 4 bytes of options (streams, block frequency M, serial/approximate entropy m, linear
  // complexity M and template m), then the sequences.
  fuzz_sts_battery: {
    'one-stream.bin': Buffer.concat([Buffer.from([0, 9, 2, 20]), bytes('battery', 512)]),
    'four-streams.bin': Buffer.concat([Buffer.from([3, 127, 45, 7]), bytes('battery4', 1024)]),
    'constant.bin': Buffer.concat([Buffer.from([1, 3, 3, 3]), Buffer.alloc(256, 0xff)]),
  },
  // A byte of options (width: value % 10, 0 = infer; 0x20: run the tracks), then samples.
  fuzz_ea_samples: {
    'bits-1.bin': Buffer.concat([Buffer.from([41]), Buffer.from(bytes('ea1', 1200).map((b) => b & 1))]),
    'nibbles-4096.bin': Buffer.concat([Buffer.from([40]), Buffer.from(bytes('ea4', 4200).map((b) => b & 15))]),
    'bytes-wide.bin': Buffer.concat([Buffer.from([3]), bytes('ea8', 64)]),
  },
  // 4 bytes of configuration (mode, entropy, alpha, start-up; history, linear bits,
  // margin, block size), then the stream.
  fuzz_health: {
    'random-bytes.bin': Buffer.concat([Buffer.from([0, 255, 20, 0]), bytes('health', 2600)]),
    'stuck-bits.bin': Buffer.concat([Buffer.from([1, 200, 20, 3]), Buffer.alloc(600, 0), bytes('health2', 200)]),
    'counter.bin': Buffer.concat([Buffer.from([6, 9, 40, 2]), Buffer.from(Array.from({ length: 1024 }, (_, i) => i & 255))]),
  },
};

for (const [target, files] of Object.entries(seeds)) {
  const dir = path.join(root, target);
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, data] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), data);
}
