// The daemon config: defaults, file, QENTROPY_* overrides, and messages that name the key.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { envNameFor, environmentVariables, loadConfig, resolveConfig } from '../src/config/index.js';
import { problem } from './helpers/config-problem.js';

const validEntropy = {
  enabled: true,
  listen: { host: '0.0.0.0', port: 443 },
  tls: { certFile: '/etc/qentropy/cert.pem', keyFile: '/etc/qentropy/key.pem' },
  source: 'device:/dev/qrandom0',
  pool: { capacityBytes: 4 * 1024 * 1024, lowWaterBytes: 1024 * 1024 },
  health: { minEntropyPerByte: 7 },
};

describe('config', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-config-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('has documented defaults when the file is empty', () => {
    const config = resolveConfig({}, { env: {} });
    expect(config.stateDir).toBe('/var/lib/qentropy');
    expect(config.storage.url).toBe('sqlite:/var/lib/qentropy/qentropy.db');
    expect(config.log.level).toBe('info');
    expect(config.entropy).toEqual({
      enabled: false,
      listen: { host: '127.0.0.1', port: 8443, maxConnections: 512 },
      plainHttp: false,
      source: 'hwrng',
      pool: { capacityBytes: 16 * 1024 * 1024, lowWaterBytes: 8 * 1024 * 1024 },
      health: { minEntropyPerByte: 7.5, failureLimit: 64 },
      rateLimit: { requests: 30, windowMs: 10_000 },
      logRequests: false,
    });
    expect(config.quality.logRequests).toBe(false);
    expect(config.kme.enabled).toBe(false);
    expect(config.quality.enabled).toBe(false);
    expect(config.feeder.enabled).toBe(false);
  });

  it('reads the file named by --config or QENTROPY_CONFIG; the state dir moves the default database', () => {
    const file = path.join(dir, 'q.json');
    fs.writeFileSync(file, JSON.stringify({ $comment: 'production', stateDir: '/srv/qe', entropy: validEntropy }));
    const config = loadConfig({ env: { QENTROPY_CONFIG: file } });
    expect(config.file).toBe(file);
    expect(config.storage.url).toBe('sqlite:/srv/qe/qentropy.db');
    expect(config.entropy).toMatchObject({
      enabled: true,
      source: 'device:/dev/qrandom0',
      tls: { certFile: '/etc/qentropy/cert.pem', keyFile: '/etc/qentropy/key.pem', minVersion: 'TLSv1.3' },
      pool: { capacityBytes: 4 * 1024 * 1024, lowWaterBytes: 1024 * 1024 },
    });
  });

  it('an explicitly named file must exist and be JSON', () => {
    expect(problem(() => loadConfig({ file: path.join(dir, 'none.json') }))).toBe(`config: cannot read ${path.join(dir, 'none.json')}: no such file`);
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{"entropy": {');
    expect(problem(() => loadConfig({ file: bad }))).toMatch(new RegExp(`^config: ${bad} is not valid JSON: `));
    fs.writeFileSync(bad, '[1]');
    expect(problem(() => loadConfig({ file: bad }))).toBe('config: the config must be a JSON object, got an array');
  });

  it('names the key and the problem', () => {
    const cases: Array<[unknown, string]> = [
      [{ entropy: { source: 'quantum' } }, 'entropy.source: expected one of hwrng, device:PATH, rdseed, upstream, getrandom, got "quantum"'],
      [{ entropy: { source: 'device:dev/qrng' } }, 'entropy.source: device:PATH needs an absolute path, got "device:dev/qrng"'],
      [{ entropy: { listen: { port: 70000 } } }, 'entropy.listen.port: expected an integer 0..65535, got 70000'],
      [{ entropy: { listen: { port: '443' } } }, 'entropy.listen.port: expected an integer 0..65535, got "443"'],
      [{ entropy: { listne: {} } }, 'entropy.listne: unknown key (known here: enabled, listen, tls, plainHttp, source, upstream, pool, health, rateLimit, logRequests)'],
      [{ entropy: { enabled: 'yes' } }, 'entropy.enabled: expected true or false, got "yes"'],
      [{ entropy: { enabled: true } }, 'entropy.tls: certFile and keyFile are required (or set entropy.plainHttp to true to serve plain HTTP)'],
      [{ entropy: { tls: { certFile: '/c.pem' } } }, 'entropy.tls.keyFile: is required'],
      [{ entropy: { source: 'upstream' } }, 'entropy.upstream: is required when entropy.source is "upstream"'],
      [{ entropy: { source: 'upstream', upstream: { url: 'ftp://x' , tokenFile: '/t' } } }, 'entropy.upstream.url: expected an http(s) URL, got "ftp://x"'],
      [{ entropy: { source: 'upstream', upstream: { url: 'https://x' } } }, 'entropy.upstream: needs tokenFile (or token)'],
      [{ entropy: { pool: { capacityBytes: 1048576, lowWaterBytes: 2097152 } } }, 'entropy.pool.lowWaterBytes: must not exceed pool.capacityBytes (1048576)'],
      [{ entropy: { health: { minEntropyPerByte: 0 } } }, 'entropy.health.minEntropyPerByte: expected a number > 0 and <= 8, got 0'],
      [{ entropy: { health: { minEntropyPerByte: 8.5 } } }, 'entropy.health.minEntropyPerByte: expected a number > 0 and <= 8, got 8.5'],
      [{ entropy: [] }, 'entropy: expected an object, got an array'],
      [{ storage: { url: 'mysql://db/x' } }, "storage.url: storage URL 'mysql://db/x': unsupported scheme (use sqlite:PATH or postgres://...)"],
      [{ storage: { uri: 'x' } }, 'storage.uri: unknown key (known here: url)'],
      [{ stateDir: 'var/lib' }, 'stateDir: must be an absolute path, got "var/lib"'],
      [{ log: { level: 'loud' } }, 'log.level: expected one of fatal, error, warn, info, debug, trace, silent, got "loud"'],
      [{ entropi: {} }, 'entropi: unknown key (known: stateDir, storage, log, entropy, quality, kme, feeder)'],
    ];
    for (const [raw, message] of cases) expect(problem(() => resolveConfig(raw))).toBe(`config: ${message}`);
  });

  it('reports every problem of a file at once', () => {
    expect(problem(() => resolveConfig({ log: { level: 'x' }, entropy: { listen: { port: -1 }, source: 'x' } }))).toBe(
      'config: 3 problems: log.level: expected one of fatal, error, warn, info, debug, trace, silent, got "x"; ' +
        'entropy.listen.port: expected an integer 0..65535, got -1; ' +
        'entropy.source: expected one of hwrng, device:PATH, rdseed, upstream, getrandom, got "x"',
    );
  });

  it('role sections are validated by their roles, with their key in the message', () => {
    for (const key of ['quality', 'feeder', 'kme']) expect(problem(() => resolveConfig({ [key]: 5 }))).toMatch(new RegExp(`^config: ${key}\\b`));
    expect(problem(() => resolveConfig({ kme: { listen: {} } }))).toMatch(/^config: kme\.\w+/);
    expect(resolveConfig({}).kme).toEqual({ enabled: false });
  });

  it('QENTROPY_* variables override the file, and the command line overrides both', () => {
    const env = {
      QENTROPY_STATE_DIR: '/data/qe',
      QENTROPY_LOG_LEVEL: 'debug',
      QENTROPY_ENTROPY_LISTEN_PORT: '9443',
      QENTROPY_ENTROPY_PLAIN_HTTP: 'true',
      QENTROPY_ENTROPY_POOL_CAPACITY_BYTES: '1048576',
      QENTROPY_ENTROPY_HEALTH_MIN_ENTROPY_PER_BYTE: '6.5',
    };
    const config = resolveConfig(
      { entropy: { enabled: true, listen: { host: '127.0.0.1', port: 1 } }, log: { level: 'warn' } },
      { env, overrides: { 'storage.url': 'postgres://db/q' } },
    );
    expect(config.stateDir).toBe('/data/qe');
    expect(config.log.level).toBe('debug');
    expect(config.entropy).toMatchObject({
      listen: { host: '127.0.0.1', port: 9443 },
      plainHttp: true,
      pool: { capacityBytes: 1048576, lowWaterBytes: 524288 },
      health: { minEntropyPerByte: 6.5 },
    });
    expect(config.storage.url).toBe('postgres://db/q');
    const both = resolveConfig({}, { env: { QENTROPY_STORAGE_URL: 'sqlite:/a.db' }, overrides: { 'storage.url': 'sqlite:/b.db' } });
    expect(both.storage.url).toBe('sqlite:/b.db');
    expect(resolveConfig({}, { env: { QENTROPY_STORAGE_URL: 'sqlite:/a.db' } }).storage.url).toBe('sqlite:/a.db');
  });

  it('a bad environment value names the variable', () => {
    expect(problem(() => resolveConfig({}, { env: { QENTROPY_ENTROPY_LISTEN_PORT: 'https' } }))).toBe(
      'config: entropy.listen.port (from QENTROPY_ENTROPY_LISTEN_PORT): expected an integer 0..65535, got "https"',
    );
    expect(problem(() => resolveConfig({}, { env: { QENTROPY_ENTROPY_ENABLED: 'yes' } }))).toBe(
      'config: entropy.enabled (from QENTROPY_ENTROPY_ENABLED): expected true or false, got "yes"',
    );
  });

  it('relative paths in the file name files beside it, whatever the current directory; the environment’s stay as given', () => {
    const site = path.join(dir, 'site');
    fs.mkdirSync(site);
    const file = path.join(site, 'a.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        storage: { url: 'sqlite:./a.db' },
        entropy: { ...validEntropy, tls: { certFile: 'tls/cert.pem', keyFile: '../keys/key.pem' }, upstream: { url: 'https://up.example', tokenFile: 'token' } },
        quality: { tls: { certFile: 'q.crt', keyFile: '/etc/q.key' } },
        kme: {
          id: 'A',
          tls: { cert: 'kme-A.crt', key: 'kme-A.key', ca: 'ca.crt' },
          storage: 'kme.db',
          siteKeyFile: 'a.sitekey',
          seedSource: 'system',
          peers: { B: { url: 'https://127.0.0.1:8442', pskFile: 'psk-A-B' }, C: { url: 'https://127.0.0.1:8443' } },
        },
        feeder: { sources: [{ url: 'https://up.example', tokenFile: 'feeder.token' }], files: [{ path: 'out/seed.bin' }] },
      }),
    );
    const config = loadConfig({ file: path.relative(process.cwd(), file), env: { QENTROPY_ENTROPY_TLS_KEY_FILE: 'from-env.pem' } });
    expect(config.storage.url).toBe(`sqlite:${path.join(site, 'a.db')}`);
    expect(config.entropy.tls).toMatchObject({ certFile: path.join(site, 'tls/cert.pem'), keyFile: 'from-env.pem' });
    expect(config.entropy.upstream?.tokenFile).toBe(path.join(site, 'token'));
    expect(config.quality.tls).toMatchObject({ certFile: path.join(site, 'q.crt'), keyFile: '/etc/q.key' });
    const kme = config.kme as import('../src/config/sections/kme.js').KmeConfig;
    // (kme.tls also holds its key-exchange groups, a runtime-dependent default; docs/post-quantum.md)
    expect(kme.tls).toMatchObject({ cert: path.join(site, 'kme-A.crt'), key: path.join(site, 'kme-A.key'), ca: path.join(site, 'ca.crt') });
    expect(kme.storage).toBe(`sqlite:${path.join(site, 'kme.db')}`);
    expect(kme.siteKeyFile).toBe(path.join(site, 'a.sitekey'));
    expect(Object.keys(kme.peers)).toEqual(['B', 'C']);
    expect(kme.peers.B).toMatchObject({ url: 'https://127.0.0.1:8442', pskFile: path.join(site, 'psk-A-B') });
    expect(kme.peers.C).toMatchObject({ url: 'https://127.0.0.1:8443' });
    expect(kme.peers.C!.pskFile).toBeUndefined();
    expect(config.feeder.sources[0]?.tokenFile).toBe(path.join(site, 'feeder.token'));
    expect(config.feeder.files[0]?.path).toBe(path.join(site, 'out/seed.bin'));
    // A PostgreSQL URL is not a path.
    fs.writeFileSync(file, JSON.stringify({ storage: { url: 'postgres://q@db/qentropy' } }));
    expect(loadConfig({ file, env: {} }).storage.url).toBe('postgres://q@db/qentropy');
  });

  it('derives variable names from key paths', () => {
    expect(envNameFor('stateDir')).toBe('QENTROPY_STATE_DIR');
    expect(envNameFor('storage.url')).toBe('QENTROPY_STORAGE_URL');
    expect(envNameFor('entropy.pool.lowWaterBytes')).toBe('QENTROPY_ENTROPY_POOL_LOW_WATER_BYTES');
    const names = environmentVariables().map((v) => v.name);
    expect(names).toContain('QENTROPY_ENTROPY_TLS_CERT_FILE');
    expect(new Set(names).size).toBe(names.length);
  });
});
