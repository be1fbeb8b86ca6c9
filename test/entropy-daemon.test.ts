// The entropy role as `qentropy daemon` runs it: config -> role -> HTTPS listener, with
// signals: SIGHUP reloads, SIGTERM drains and stops within the deadline.
import { execFileSync, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import pino from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AccountStore } from '../src/accounts/index.js';
import { EntropyClient, fetchEntropy } from '../src/client/index.js';
import { resolveConfig } from '../src/config/index.js';
import { buildRoles, runRoles, type EntropyRole, type SharedServices } from '../src/roles/index.js';
import { createNativeTester } from '../src/sources/native-tester.js';
import { openDatabase } from '../src/storage/db.js';
import { testTls, writePemFiles } from './entropy-harness.js';
import { scaled, waitFor } from './helpers/time.js';

let dir: string;
let tlsFiles: Record<string, string>;
let caPem: string;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-daemon-'));
  const tls = await testTls();
  caPem = tls.ca.certPem;
  tlsFiles = writePemFiles({ 'cert.pem': tls.cert, 'key.pem': tls.key }).paths;
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A logger that keeps its lines, to check what the daemon says. */
function captureLogger(): { logger: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = { write: (s: string) => chunks.push(s) };
  return {
    logger: pino({ level: 'info' }, stream),
    lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

async function tokenFor(storageUrl: string): Promise<string> {
  const db = await openDatabase({ url: storageUrl });
  const store = await AccountStore.open(db);
  const account = (await store.getAccount('daemon')) ?? (await store.createAccount({ name: 'daemon' }));
  const { token } = await store.createToken(account.id);
  await db.close();
  return token;
}

describe('entropy role under the daemon runner', () => {
  it('serves over TLS from config, warns about a development source, reloads on SIGHUP, drains on SIGTERM', async () => {
    const storageUrl = `sqlite:${path.join(dir, 'daemon.db')}`;
    const config = resolveConfig({
      storage: { url: storageUrl },
      entropy: {
        enabled: true,
        listen: { host: '127.0.0.1', port: 0 },
        tls: { certFile: tlsFiles['cert.pem'], keyFile: tlsFiles['key.pem'] },
        source: 'getrandom',
        pool: { capacityBytes: 1024 * 1024 },
      },
    });
    const token = await tokenFor(storageUrl);
    const { logger, lines } = captureLogger();
    const shared: SharedServices = {};
    const roles = await buildRoles(config, { logger, stateDir: dir, shared }, { entropy: { createTester: createNativeTester } });
    expect(roles.map((r) => r.name)).toEqual(['entropy']);
    const signals = new EventEmitter();
    const running = runRoles(roles, logger, { signals });
    const role = roles[0] as EntropyRole;
    await waitFor(() => role.address !== undefined, 30_000, 'the entropy role to listen');
    expect(role.address!.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    await role.pool!.waitForLevel(64 * 1024);
    // Published for the quality role, which draws from the same pool.
    expect(shared.entropyPool).toBe(role.pool);

    const data = await fetchEntropy({ url: role.address!.url, token, ca: caPem, size: 8 });
    expect(data).toHaveLength(8 * 1024);

    signals.emit('SIGHUP');
    await new Promise((r) => setTimeout(r, 50));
    // A client holding a keep-alive connection open does not hold up the stop.
    const client = new EntropyClient({ url: role.address!.url, token, ca: caPem });
    expect(await client.fetch(2)).toHaveLength(2048);
    const started = Date.now();
    signals.emit('SIGTERM');
    expect(await running).toBe(0);
    expect(Date.now() - started).toBeLessThan(2000);
    await client.close();
    // Stopped means stopped: nothing listens any more.
    await expect(fetchEntropy({ url: role.address!.url, token, ca: caPem, retry: { maxAttempts: 1 } })).rejects.toThrow(/ECONNREFUSED|failed/);

    const log = lines();
    expect(log.some((l) => l.level === 40 && String(l.msg).includes('DEVELOPMENT SOURCE'))).toBe(true);
    expect(log.some((l) => String(l.msg) === 'entropy service listening')).toBe(true);
    expect(log.some((l) => String(l.msg) === 'TLS certificate and key reloaded')).toBe(true);
    // entropy.logRequests defaults to false, as for every role: no line per request.
    expect(log.some((l) => l.msg === 'incoming request' || l.msg === 'request completed')).toBe(false);
    // No token anywhere in the logs.
    expect(JSON.stringify(log)).not.toContain(token);
  });

  it('refuses to start without TLS files unless plain HTTP is configured, and undoes a failed start', async () => {
    const { logger } = captureLogger();
    const storageUrl = `sqlite:${path.join(dir, 'nofiles.db')}`;
    const config = resolveConfig({
      storage: { url: storageUrl },
      entropy: {
        enabled: true,
        listen: { host: '127.0.0.1', port: 0 },
        tls: { certFile: path.join(dir, 'missing-cert.pem'), keyFile: path.join(dir, 'missing-key.pem') },
        source: 'getrandom',
      },
    });
    const roles = await buildRoles(config, { logger, stateDir: dir });
    await expect(runRoles(roles, logger, { signals: new EventEmitter() })).rejects.toThrow(/certFile: cannot read/);
  });

  it('serves a SQLite database from one process: a second daemon on the same file refuses to start, and says why', async () => {
    const storageUrl = `sqlite:${path.join(dir, 'one-server.db')}`;
    const configFor = () =>
      resolveConfig({
        storage: { url: storageUrl },
        entropy: { enabled: true, plainHttp: true, listen: { host: '127.0.0.1', port: 0 }, source: 'getrandom', pool: { capacityBytes: 1024 * 1024 } },
      });
    const { logger } = captureLogger();
    const [first] = await buildRoles(configFor(), { logger, stateDir: dir }) as EntropyRole[];
    await first!.start();
    try {
      const [second] = await buildRoles(configFor(), { logger, stateDir: dir }) as EntropyRole[];
      await expect(second!.start()).rejects.toThrow(
        new RegExp(`another qentropy process \\(pid ${process.pid}\\) already serves the entropy role from .*one-server\\.db; .*use PostgreSQL`),
      );
      // The refused start left the database usable: the first still serves.
      const token = await tokenFor(storageUrl);
      await first!.pool!.waitForLevel(1024);
      expect(await fetchEntropy({ url: first!.address!.url, token })).toHaveLength(1024);
    } finally {
      await first!.stop();
    }
    // Once the first has stopped, another may serve the file.
    const [third] = await buildRoles(configFor(), { logger, stateDir: dir }) as EntropyRole[];
    await third!.start();
    await third!.stop();
  });

  // A plain-HTTP entropy role on loopback (getrandom, its own SQLite file) run by the daemon
  // runner, once it listens; stop() sends SIGTERM and resolves with the exit code.
  async function runPlainEntropy(database: string, capacityBytes: number) {
    const storageUrl = `sqlite:${path.join(dir, database)}`;
    const config = resolveConfig({
      storage: { url: storageUrl },
      entropy: { enabled: true, plainHttp: true, listen: { host: '127.0.0.1', port: 0 }, source: 'getrandom', pool: { capacityBytes } },
    });
    const token = await tokenFor(storageUrl);
    const { logger } = captureLogger();
    const roles = await buildRoles(config, { logger, stateDir: dir });
    const signals = new EventEmitter();
    const running = runRoles(roles, logger, { signals });
    const role = roles[0] as EntropyRole;
    await waitFor(() => role.address !== undefined, 30_000, 'the entropy role to listen');
    const stop = () => {
      signals.emit('SIGTERM');
      return running;
    };
    return { role, token, stop };
  }

  it('serves plain HTTP on loopback when configured', async () => {
    const { role, token, stop } = await runPlainEntropy('plain.db', 1024 * 1024);
    expect(role.address!.url).toMatch(/^http:\/\//);
    await role.pool!.waitForLevel(1024);
    expect(await fetchEntropy({ url: role.address!.url, token })).toHaveLength(1024);
    expect(await stop()).toBe(0);
  });

  it('a 503 ends: with the minimum pool and the default low-water mark, size=512 after size=1 is served once the client honours Retry-After', async () => {
    // The config from the report: the documented minimum pool, low water left at half.
    const { role, token, stop } = await runPlainEntropy('min-pool.db', 524288);
    try {
      await role.pool!.waitForLevel(524288);
      const get = async (size: number) => {
        const res = await request(`${role.address!.url}/api/v1/quantum-entropy?size=${size}`, { headers: { authorization: `Bearer ${token}` } });
        await res.body.arrayBuffer();
        return res;
      };
      expect((await get(1)).statusCode).toBe(200);
      // 523,264 bytes left: above the low-water mark (262,144), below the request.
      expect(role.pool!.level).toBe(523264);
      const short = await get(512);
      expect(short.statusCode).toBe(503);
      expect(short.headers['retry-after']).toBe('1');
      // A client honouring Retry-After gets its answer (it used to get 503 forever): it
      // waits what each 503 says, as long as a loaded machine needs to refill the pool.
      let retried = short;
      const deadline = Date.now() + scaled(30_000);
      while (retried.statusCode === 503 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, Number(retried.headers['retry-after']) * 1000));
        retried = await get(512);
      }
      expect(retried.statusCode).toBe(200);
    } finally {
      expect(await stop()).toBe(0);
    }
  });

  it('stops within the deadline even when the device never delivers (a FIFO with no writer)', async () => {
    const fifo = path.join(dir, 'silent-device');
    execFileSync('mkfifo', [fifo]);
    const config = resolveConfig({
      storage: { url: `sqlite:${path.join(dir, 'fifo.db')}` },
      entropy: { enabled: true, plainHttp: true, listen: { host: '127.0.0.1', port: 0 }, source: `device:${fifo}` },
    });
    const { logger } = captureLogger();
    const roles = await buildRoles(config, { logger, stateDir: dir }, { entropy: { createTester: createNativeTester } });
    const signals = new EventEmitter();
    const running = runRoles(roles, logger, { signals });
    const role = roles[0] as EntropyRole;
    await waitFor(() => role.address !== undefined, 30_000, 'the entropy role to listen');
    const health = (await fetch(`${role.address!.url}/healthz`).then((r) => r.json())) as { source: { state: string } };
    expect(health.source.state).toBe('starting');
    const started = Date.now();
    signals.emit('SIGTERM');
    expect(await running).toBe(0);
    expect(Date.now() - started).toBeLessThan(4000);
    // Unblock the thread still waiting in open(): a writer appears and leaves at once.
    fs.closeSync(fs.openSync(fifo, fs.constants.O_WRONLY));
  });
});

describe('a deterministic device is taken out of service and never served', () => {
  // The device is a FIFO with a writer process behind it, as a QRNG card's character device
  // would be: a stream that never ends. The writer repeats `period` (or LFSR output) forever.
  const writerScript = `
    const fs = require('node:fs');
    const crypto = require('node:crypto');
    const [path, kind] = process.argv.slice(1);
    const out = fs.openSync(path, 'w');
    let state = 0xace1beef, n = 0;
    const block = crypto.randomBytes(1024);
    function next() {
      const buf = Buffer.alloc(64 * 1024);
      if (kind === 'random') crypto.randomFillSync(buf);
      for (let i = 0; i < buf.length; i++, n++) {
        if (kind === 'counter') buf[i] = n & 0xff;
        else if (kind === 'block') buf[i] = block[n % 1024];
        else if (kind === 'lfsr') {
          // A 32-bit Galois LFSR (taps 32, 22, 2, 1), one output bit per step, packed MSB first.
          let byte = 0;
          for (let b = 0; b < 8; b++) { const bit = state & 1; state >>>= 1; if (bit) state ^= 0x80200003; byte = (byte << 1) | bit; }
          buf[i] = byte;
        }
      }
      return buf;
    }
    try { for (;;) fs.writeSync(out, next()); } catch { process.exit(0); }
  `;

  async function serveFrom(kind: string) {
    const fifo = path.join(dir, `device-${kind}`);
    execFileSync('mkfifo', [fifo]);
    const writer = spawn(process.execPath, ['-e', writerScript, fifo, kind], { stdio: 'ignore' });
    const storageUrl = `sqlite:${path.join(dir, `device-${kind}.db`)}`;
    const token = await tokenFor(storageUrl);
    const config = resolveConfig({
      storage: { url: storageUrl },
      entropy: { enabled: true, plainHttp: true, listen: { host: '127.0.0.1', port: 0 }, source: `device:${fifo}`, rateLimit: { requests: 10_000 } },
    });
    const { logger, lines } = captureLogger();
    const roles = await buildRoles(config, { logger, stateDir: dir }, { entropy: { createTester: createNativeTester } });
    const signals = new EventEmitter();
    const running = runRoles(roles, logger, { signals });
    const role = roles[0] as EntropyRole;
    await waitFor(() => role.address !== undefined, 30_000, 'the entropy role to listen');
    const url = role.address!.url;
    const served: Buffer[] = [];
    const statuses: number[] = [];
    /** Asks for 16 blocks at a time until `until` holds; keeps whatever is served. */
    async function drain(until: (state: string) => boolean) {
      for (let i = 0; i < 500; i++) {
        const res = await request(`${url}/api/v1/quantum-entropy?size=16`, { headers: { authorization: `Bearer ${token}` } });
        statuses.push(res.statusCode);
        if (res.statusCode === 200) {
          const body = (await res.body.json()) as { random: string[] };
          served.push(...body.random.map((b) => Buffer.from(b, 'base64')));
        } else await res.body.arrayBuffer();
        const health = (await request(`${url}/healthz`).then((r) => r.body.json())) as { source: { state: string } };
        if (until(health.source.state)) return;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error('drained 500 times without reaching the expected state');
    }
    const stop = async () => {
      signals.emit('SIGTERM');
      expect(await running).toBe(0);
      writer.kill();
    };
    return { url, role, served, statuses, drain, stop, lines };
  }

  it.each([
    ['counter', /^source device:\S+ out of service: not random: output repeats: 64 bytes of this block occurred 256 bytes earlier/],
    ['lfsr', /^source device:\S+ out of service: not random: linear complexity 32 of 1280 bits/],
    ['block', /^source device:\S+ out of service: not random: output repeats: 64 bytes of this block occurred 1024 bytes earlier/],
  ])('a %s stream: /healthz says why, nothing of it is served, the metrics count it', async (kind, warning) => {
    const s = await serveFrom(kind);
    try {
      await s.drain((state) => state === 'failed');
      const health = await request(`${s.url}/healthz`);
      expect(health.statusCode).toBe(503);
      const body = (await health.body.json()) as { source: Record<string, unknown>; warnings: string[] };
      expect(body.warnings).toContainEqual(expect.stringMatching(warning));
      expect(body.source).toMatchObject({ state: 'failed', blocksPassed: 0 });
      expect(s.served).toEqual([]);
      expect(s.statuses.every((code) => code === 503)).toBe(true);
      expect(s.role.pool!.level).toBe(0);
      const metrics = await request(`${s.url}/metrics`).then((r) => r.body.text());
      expect(metrics).toMatch(/qentropy_source_state\{source="device:[^"]+",state="failed"\} 1/);
      expect(metrics).toMatch(/qentropy_health_test_failures\{source="device:[^"]+",test="pattern"\} 1/);
      expect(s.lines().some((l) => l.msg === 'entropy source taken out of service' && String(l.reason).startsWith('not random: '))).toBe(true);
    } finally {
      await s.stop();
    }
  }, 30_000);

  it('a random stream through the same path keeps being served', async () => {
    const s = await serveFrom('random');
    try {
      await s.drain(() => s.statuses.length >= 60);
      const health = (await request(`${s.url}/healthz`).then((r) => r.body.json())) as { source: Record<string, unknown> };
      expect(health.source).toMatchObject({ state: 'ok' });
      expect(health.source.testFailures).not.toHaveProperty('pattern');
      // 60 requests of 16 blocks (960 KiB, more than the pool holds): the filler kept up.
      expect(s.statuses.filter((code) => code === 200).length).toBeGreaterThanOrEqual(50);
      expect(s.served.every((b) => b.length === 1024)).toBe(true);
      expect(new Set(s.served.map((b) => b.toString('hex'))).size).toBe(s.served.length);
    } finally {
      await s.stop();
    }
  }, 60_000);
});
