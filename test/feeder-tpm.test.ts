// The PKCS#11 sink against a second, independent PKCS#11 implementation: tpm2-pkcs11 on a
// software TPM 2.0 (swtpm), started here. C_SeedRandom there becomes TPM2_StirRandom, and
// swtpm's own command log shows the TPM received exactly the bytes the feeder took from
// its source, in order.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { resolveConfig } from '../src/config/index.js';
import { buildFeeder, FeedBuffer } from '../src/feeder/index.js';
import { captureLogger, goodBlock, sourceEntry, Upstream, waitFor } from './feeder-harness.js';
import { haveTpm, startTpmToken, stirRandomSeeds, type TpmToken } from './helpers/tpm.js';

const LABEL = 'qentropy-tpm';
const PIN = '246810';
let dir = '';
let upstream: Upstream;
let tpm: TpmToken | undefined;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qe-feeder-tpm-'));
  upstream = await Upstream.create();
  await upstream.start();
  if (!haveTpm) return;
  tpm = await startTpmToken(dir, LABEL, PIN);
  Object.assign(process.env, tpm.env);
}, 60_000);
afterAll(async () => {
  tpm?.stop();
  await upstream?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!haveTpm)('PKCS#11 sink with a TPM 2.0 token (swtpm + tpm2-pkcs11)', () => {
  it('seeds the token: the TPM receives exactly the source\'s bytes through TPM2_StirRandom', async () => {
    const known = Buffer.concat(Array.from({ length: 4 }, goodBlock));
    upstream.pool.clear();
    upstream.pool.put(Buffer.from(known));
    const pinFile = path.join(dir, 'pin');
    fs.writeFileSync(pinFile, `${PIN}\n`, { mode: 0o600 });
    const config = resolveConfig({
      stateDir: dir,
      feeder: {
        enabled: true,
        sources: [await sourceEntry(upstream, dir, 4)],
        kernel: { enabled: false },
        pkcs11: [{ module: tpm!.module, tokenLabel: LABEL, pinFile, bytes: 48, intervalMs: 100 }],
      },
    }).feeder;
    const { logger, lines } = captureLogger();
    const before = stirRandomSeeds(tpm!.commandLog).length;
    const feeder = await buildFeeder(config, { logger, buffer: new FeedBuffer({ capacity: 4096 }), retry: { baseDelayMs: 20, maxDelayMs: 100 } });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.feeds >= 3, 15_000, 'three seeds into the TPM');
    const status = await feeder.status();
    await feeder.stop();
    const sink = status.sinks[0]!;
    expect(sink).toMatchObject({ name: `pkcs11:${LABEL}`, kind: 'pkcs11', errors: 0 });
    expect(sink.bytesFed).toBe(sink.feeds * 48);
    const slots = sink.details!.slots as Array<{ label: string; status: string; seedCalls: number; lastRv: string }>;
    expect(slots).toEqual([expect.objectContaining({ label: LABEL, status: 'active', lastRv: 'CKR_OK' })]);
    // The TPM's record: one TPM2_StirRandom per feed, carrying the source's bytes in order.
    const seeds = stirRandomSeeds(tpm!.commandLog).slice(before);
    expect(seeds.length).toBeGreaterThanOrEqual(sink.feeds);
    expect(Buffer.concat(seeds.slice(0, sink.feeds)).equals(known.subarray(0, sink.feeds * 48))).toBe(true);
    expect(lines().filter((l) => Number(l.level) >= 50)).toEqual([]);
  });
});
