// Secret files named in the config or on the command line (issue 26 item 7): access-token
// files and HSM PIN files are refused when group or others may read them, with the
// message the site key and PSK files give ("... is accessible to other users (mode 644);
// chmod 600 it"), before anything is sent or opened with them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';

import { resolveConfig } from '../src/config/index.js';
import { buildFeeder, FeedBuffer } from '../src/feeder/index.js';
import { loadPsk, SiteKey } from '../src/kme/index.js';
import { EntropyRole } from '../src/roles/entropy.js';
import { cli } from './helpers/cli.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-secrets-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function secret(name: string, text: string, mode: number): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  fs.chmodSync(file, mode);
  return file;
}

const logger = pino({ level: 'silent' });

function feederConfig(extra: object) {
  return resolveConfig({
    feeder: {
      enabled: true,
      sources: [{ url: 'https://127.0.0.1:1', tokenFile: secret('feeder-token', 'qe_token\n', 0o600) }],
      kernel: { enabled: false },
      files: [{ path: path.join(dir, 'seed.bin') }],
      status: { file: path.join(dir, 'status.json'), listen: false },
      ...extra,
    },
  }).feeder;
}

describe('secret files with loose modes', () => {
  it('a feeder PIN file readable by group or others is refused, naming the key and the fix', async () => {
    const pinFile = secret('pin', '1234\n', 0o644);
    const config = feederConfig({ pkcs11: [{ module: '/usr/lib/softhsm/libsofthsm2.so', tokenLabel: 'x', pinFile }] });
    await expect(buildFeeder(config, { logger, buffer: new FeedBuffer({ capacity: 8 * 1024 }) })).rejects.toThrow(
      `feeder.pkcs11.0.pinFile: PIN file ${pinFile} is accessible to other users (mode 644); chmod 600 it`,
    );
  });

  it('a feeder token file readable by its group is refused', async () => {
    const tokenFile = secret('group-token', 'qe_token\n', 0o640);
    const config = feederConfig({ sources: [{ url: 'https://127.0.0.1:1', tokenFile }] });
    await expect(buildFeeder(config, { logger, buffer: new FeedBuffer({ capacity: 8 * 1024 }) })).rejects.toThrow(
      `feeder.sources.0.tokenFile: token file ${tokenFile} is accessible to other users (mode 640); chmod 600 it`,
    );
  });

  it("the entropy role's upstream token file is checked before the role starts", async () => {
    const tokenFile = secret('upstream-token', 'qe_token\n', 0o604);
    const role = new EntropyRole(
      {
        listen: { host: '127.0.0.1', port: 0 },
        plainHttp: true,
        source: 'upstream',
        upstream: { url: 'https://127.0.0.1:1', tokenFile },
        storageUrl: `sqlite:${path.join(dir, 'entropy.db')}`,
      },
      { logger, stateDir: dir },
    );
    await expect(role.start()).rejects.toThrow(`entropy.upstream.tokenFile: token file ${tokenFile} is accessible to other users (mode 604); chmod 600 it`);
  });

  it('qentropy fetch --token-file refuses a world-readable file with one line and exit 2, before any request', async () => {
    const tokenFile = secret('cli-token', 'qe_token\n', 0o644);
    // Port 1: a request, if one were made, would fail with a different message.
    const run = await cli(['fetch', '--url', 'https://127.0.0.1:1', '--token-file', tokenFile]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(`qentropy: --token-file ${tokenFile} is accessible to other users (mode 644); chmod 600 it`);
  });

  it('qentropy quality run --token-file refuses a group-readable file before opening storage or drawing bits', async () => {
    const tokenFile = secret('quality-token', 'qe_token\n', 0o640);
    const storage = `sqlite:${path.join(dir, 'quality-cli.db')}`;
    const config = path.join(dir, 'empty.json');
    fs.writeFileSync(config, '{}');
    const run = await cli(['quality', 'run', '--storage', storage, '--url', 'https://127.0.0.1:1', '--token-file', tokenFile, '--config', config]);
    expect(run.code).not.toBe(0);
    expect(run.stderr.trim()).toBe(`qentropy: --token-file ${tokenFile} is accessible to other users (mode 640); chmod 600 it`);
  });

  it('gives the same message shape as the site key and PSK files, which keep their checks', async () => {
    const siteKey = secret('site.key', 'a'.repeat(64), 0o640);
    await expect(SiteKey.load(siteKey)).rejects.toThrow(`site key file ${siteKey} is accessible to other users (mode 640); chmod 600 it`);
    const psk = secret('psk', 'b'.repeat(64), 0o644);
    await expect(loadPsk(psk)).rejects.toThrow(`PSK file ${psk} is accessible to other users (mode 644); chmod 600 it`);
  });

  it('0600 files are read as before', async () => {
    await expect(buildFeeder(feederConfig({}), { logger, buffer: new FeedBuffer({ capacity: 8 * 1024 }) })).resolves.toBeDefined();
    const tokenFile = secret('cli-good-token', 'qe_token\n', 0o600);
    const run = await cli(['fetch', '--url', 'https://127.0.0.1:1', '--token-file', tokenFile, '--retries', '0', '--timeout', '2000']);
    expect(run.stderr).not.toContain('accessible to other users');
  });
});
