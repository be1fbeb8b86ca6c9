// The feeder's PKCS#11 sink against real modules: SoftHSMv2 receives seeds (counted by the
// module's answers and our metrics), the PIN comes from a file; OpenSC's module (no token
// here) is reported once however often it is retried, and the other sinks go on.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { resolveConfig } from '../src/config/index.js';
import { buildFeeder, FeedBuffer } from '../src/feeder/index.js';
import { captureLogger, goodBlock, sourceEntry, Upstream, waitFor } from './feeder-harness.js';
import { haveSofthsm, initSofthsmToken, softhsmModule } from './helpers/softhsm.js';

const opensc = ['/usr/lib/x86_64-linux-gnu/opensc-pkcs11.so', '/usr/lib/opensc-pkcs11.so'].find((p) => fs.existsSync(p));
const softhsm = softhsmModule;

const LABEL = 'qentropy-feeder';
const PIN = '135790';
let dir = '';
let upstream: Upstream;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qe-feeder-hsm-'));
  upstream = await Upstream.create();
  await upstream.start();
  if (!haveSofthsm) return;
  process.env.SOFTHSM2_CONF = initSofthsmToken(dir, LABEL, PIN);
});
afterAll(async () => {
  await upstream?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function feederFor(feeder: Record<string, unknown>) {
  const config = resolveConfig({
    stateDir: dir,
    feeder: { enabled: true, sources: [await sourceEntry(upstream, dir, 4)], kernel: { enabled: false }, ...feeder },
  }).feeder;
  const { logger, lines } = captureLogger();
  const f = await buildFeeder(config, { logger, buffer: new FeedBuffer({ capacity: 4096 }), retry: { baseDelayMs: 20, maxDelayMs: 100 }, reopenAfterMs: 100 });
  return { feeder: f, lines };
}

describe.skipIf(!haveSofthsm)('PKCS#11 sink with SoftHSMv2', () => {
  it('seeds the token found by label, logging in with the PIN from a file; counted by module answers and metrics', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(Array.from({ length: 4 }, goodBlock)));
    const pinFile = path.join(dir, 'pin');
    fs.writeFileSync(pinFile, `${PIN}\n`, { mode: 0o600 });
    const { feeder, lines } = await feederFor({ pkcs11: [{ module: softhsm, tokenLabel: LABEL, pinFile, bytes: 48, intervalMs: 100, mixOsRandom: true }] });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.feeds >= 3, 10_000, 'three seeds');
    const status = await feeder.status();
    await feeder.stop();
    const sink = status.sinks[0]!;
    expect(sink).toMatchObject({ name: `pkcs11:${LABEL}`, kind: 'pkcs11', errors: 0 });
    const slots = sink.details!.slots as Array<{ label: string; status: string; seedCalls: number; bytesSeeded: number; lastRv: string }>;
    expect(slots).toHaveLength(1);
    // The module's own CKR_OK answers, as counted by the native layer, match our feed count.
    expect(slots[0]).toMatchObject({ label: LABEL, status: 'active', lastRv: 'CKR_OK' });
    expect(slots[0]!.seedCalls).toBe(sink.feeds);
    expect(slots[0]!.bytesSeeded).toBe(sink.bytesFed);
    expect(sink.bytesFed).toBe(48 * sink.feeds);
    expect(await feeder.registry.metrics()).toMatch(new RegExp(`qentropy_feeder_bytes_fed_total\\{sink="pkcs11:${LABEL}",kind="pkcs11"\\} ${sink.bytesFed}`));
    expect(JSON.stringify(lines())).not.toContain(PIN);
  });

  it('a wrong PIN disables the sink (no retries that would lock the token) while a file sink goes on', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(Array.from({ length: 4 }, goodBlock)));
    const pinFile = path.join(dir, 'wrong-pin');
    fs.writeFileSync(pinFile, '000000\n', { mode: 0o600 });
    const out = path.join(dir, 'beside-hsm.bin');
    const { feeder } = await feederFor({
      pkcs11: [{ module: softhsm, tokenLabel: LABEL, pinFile, intervalMs: 100 }],
      files: [{ path: out, bytes: 512, intervalMs: 0 }],
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[1]!.bytesFed >= 4096, 10_000, 'the file sink');
    // Ten reopen periods (reopenAfterMs 100) and feed intervals later, still one attempt.
    await new Promise((r) => setTimeout(r, 1000));
    const status = feeder.statusNow();
    await feeder.stop();
    expect(status.sinks[0]).toMatchObject({ state: 'disabled', errors: 1, lastErrorCode: 'CKR_PIN_INCORRECT' });
    expect(fs.statSync(out).size).toBe(4096);
  });
});

describe.skipIf(!opensc)("PKCS#11 sink with OpenSC's module (no token, no seed support)", () => {
  it('is reported once however often it is retried, and the other sinks keep being fed', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(Array.from({ length: 4 }, goodBlock)));
    const out = path.join(dir, 'beside-opensc.bin');
    const { feeder, lines } = await feederFor({
      pkcs11: [{ module: opensc, tokenLabel: 'any-card', intervalMs: 100 }],
      files: [{ path: out, bytes: 256, intervalMs: 50 }],
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.errors >= 3, 10_000, 'three attempts on the OpenSC module');
    await waitFor(() => feeder.statusNow().sinks[1]!.bytesFed >= 2048, 10_000, 'the file sink');
    const status = feeder.statusNow();
    await feeder.stop();
    expect(status.sinks[0]).toMatchObject({ name: 'pkcs11:any-card', state: 'failing', lastErrorCode: 'NO_TOKEN' });
    const reports = lines().filter((l) => l.sink === 'pkcs11:any-card' && l.level === 50);
    expect(reports).toHaveLength(1);
    expect(String(reports[0]!.err)).toMatch(/opensc-pkcs11\.so/);
    expect(status.sinks[1]!.state).not.toBe('failing');
  });
});

// p11-kit's trust module is a real PKCS#11 module with a token ("System Trust") whose
// C_SeedRandom refuses seeds (CKR_RANDOM_NO_RNG; many HSMs answer CKR_RANDOM_SEED_NOT_SUPPORTED,
// which the native layer classes the same way).
const p11kitTrust = ['/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-trust.so'].find((p) => fs.existsSync(p));

describe.skipIf(!p11kitTrust)('PKCS#11 sink with a token that refuses seeds (p11-kit trust module)', () => {
  it('says so once in plain words, disables the sink, and the feeder goes on', async () => {
    upstream.pool.clear();
    upstream.pool.put(Buffer.concat(Array.from({ length: 8 }, goodBlock)));
    const out = path.join(dir, 'beside-refusing.bin');
    const { feeder, lines } = await feederFor({
      pkcs11: [{ module: p11kitTrust, tokenLabel: 'System Trust', intervalMs: 100 }],
      files: [{ path: out, bytes: 256, intervalMs: 50 }],
    });
    await feeder.start();
    await waitFor(() => feeder.statusNow().sinks[0]!.state === 'disabled', 10_000, 'the refusing sink to be disabled');
    await waitFor(() => feeder.statusNow().sinks[1]!.bytesFed >= 2048, 10_000, 'the file sink');
    const status = feeder.statusNow();
    await feeder.stop();
    expect(status.sinks[0]).toMatchObject({ name: 'pkcs11:System Trust', state: 'disabled', lastErrorCode: 'CKR_RANDOM_NO_RNG', errors: 1, bytesFed: 0 });
    expect(status.sinks[0]!.lastError).toBe(
      'pkcs11:System Trust: the token does not accept seeds (C_SeedRandom answered CKR_RANDOM_NO_RNG); it keeps using its own generator, and this sink is off until the config is reloaded',
    );
    const said = lines().filter((l) => l.sink === 'pkcs11:System Trust');
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 50, msg: 'feed failed; sink disabled until the config is reloaded (the other sinks go on)' });
    expect(status.sinks[1]!.state).not.toBe('disabled');
  });
});
