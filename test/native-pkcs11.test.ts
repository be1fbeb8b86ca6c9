// The PKCS#11 sink against real modules: SoftHSMv2 with a token created for this test
// (its own SOFTHSM2_CONF in a temporary directory), and OpenSC's module, which has no
// token here and whose C_SeedRandom is not supported.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { listTokens, Pkcs11Sink, type Pkcs11Error } from '../src/native/pkcs11.js';

const firstExisting = (paths: string[]): string | undefined => paths.find((p) => fs.existsSync(p));
const softhsm = firstExisting(['/usr/lib/softhsm/libsofthsm2.so', '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so']);
const opensc = firstExisting(['/usr/lib/x86_64-linux-gnu/opensc-pkcs11.so', '/usr/lib/opensc-pkcs11.so']);
const haveUtil = spawnSync('sh', ['-c', 'command -v softhsm2-util']).status === 0;

const LABEL = 'qentropy-ts';
const PIN = '246810';
let dir = '';

beforeAll(() => {
  if (!softhsm || !haveUtil) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qe-softhsm-'));
  fs.mkdirSync(path.join(dir, 'tokens'), { mode: 0o700 });
  fs.writeFileSync(
    path.join(dir, 'softhsm2.conf'),
    `directories.tokendir = ${dir}/tokens\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  // SoftHSM reads this when the module is first initialized in this process.
  process.env.SOFTHSM2_CONF = path.join(dir, 'softhsm2.conf');
  const init = spawnSync(
    'softhsm2-util',
    ['--init-token', '--free', '--label', LABEL, '--pin', PIN, '--so-pin', '13579111'],
    { encoding: 'utf8', env: process.env },
  );
  if (init.status !== 0) throw new Error(`softhsm2-util failed: ${init.stderr}`);
});
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!softhsm || !haveUtil)('SoftHSMv2', () => {
  it('lists the token by label (the slot id is whatever SoftHSM chose)', async () => {
    const tokens = await listTokens(softhsm!);
    const ours = tokens.find((t) => t.label === LABEL);
    expect(ours).toMatchObject({ label: LABEL, manufacturer: 'SoftHSM project', hasRng: true });
  });

  it('receives seeds: C_SeedRandom succeeds and is counted', async () => {
    const sink = await Pkcs11Sink.open({ modulePath: softhsm!, tokenLabel: LABEL, pin: PIN });
    const results = await Promise.all([1, 2, 3].map(() => sink.seed(0, Buffer.alloc(48, 0x5a))));
    for (const r of results) expect(r).toMatchObject({ ok: true, skipped: false, rv: 'CKR_OK' });
    const [slot] = await sink.slots();
    expect(slot).toMatchObject({ label: LABEL, status: 'active', seedCalls: 3, bytesSeeded: 144, errors: 0 });
    expect((await sink.generate(0, 16)).length).toBe(16);
    await sink.close();
  });

  it('mixes with OS randomness when asked', async () => {
    const sink = await Pkcs11Sink.open({ modulePath: softhsm!, tokenLabel: LABEL, pin: PIN, mixOsRandom: true });
    expect((await sink.seed(0, Buffer.alloc(48))).ok).toBe(true);
    await sink.close();
  });

  it('a wrong PIN is refused with its CKR name', async () => {
    await expect(Pkcs11Sink.open({ modulePath: softhsm!, tokenLabel: LABEL, pin: '000000' })).rejects.toMatchObject({
      code: 'CKR_PIN_INCORRECT',
    });
  });

  it('an unknown label names the tokens that are there', async () => {
    const err = (await Pkcs11Sink.open({ modulePath: softhsm!, tokenLabel: 'nope' }).catch((e: unknown) => e)) as Pkcs11Error;
    expect(err.code).toBe('NO_TOKEN');
    expect(err.message).toContain(`'${LABEL}'`);
  });

  it('bad slot indexes are rejected, not crashes', async () => {
    const sink = await Pkcs11Sink.open({ modulePath: softhsm!, tokenLabel: LABEL });
    await expect(sink.seed(5, Buffer.alloc(8))).rejects.toMatchObject({ code: 'INVALID' });
    await sink.close();
  });
});

describe.skipIf(!opensc)("OpenSC's module", () => {
  it('loads, reports no token, and a sink for it fails with a clear message', async () => {
    expect(await listTokens(opensc!)).toEqual([]);
    const err = (await Pkcs11Sink.open({ modulePath: opensc!, tokenLabel: 'hsm' }).catch((e: unknown) => e)) as Pkcs11Error;
    expect(err.code).toBe('NO_TOKEN');
    expect(err.message).toMatch(/reports no token present/);
  });
});

it('a file that is not a module is reported, not fatal', async () => {
  await expect(listTokens('/nonexistent/pkcs11.so')).rejects.toMatchObject({ code: 'MODULE_LOAD' });
  await expect(listTokens('/etc/hostname')).rejects.toMatchObject({ code: 'MODULE_LOAD' });
});
