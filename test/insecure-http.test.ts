// Secrets over plain HTTP (issue 26 item 5): every block that sends a bearer token to an
// entropy API (entropy.upstream, quality.entropyApi, feeder.sources, and kme.entropyApi,
// which also receives the seeds of every key) refuses http:// to a host other than
// loopback, naming the key; `allowInsecureHttp: true` accepts it and the role says so in
// a warning at start.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';

import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';

import { resolveConfig } from '../src/config/index.js';
import { buildFeeder, FeedBuffer } from '../src/feeder/index.js';
import { problem } from './helpers/config-problem.js';

const kmeBase = {
  id: 'A',
  tls: { cert: '/etc/q/kme-A.crt', key: '/etc/q/kme-A.key', ca: '/etc/q/ca.crt' },
  siteKeyFile: '/etc/q/a.sitekey',
  peers: { B: { url: 'https://127.0.0.1:8442' } },
  seedSource: 'entropy-api',
};

/** The config with `url` (and `extra`) put in each of the four secret-sending blocks. */
const blocks: Record<string, (url: string, extra?: object) => object> = {
  'entropy.upstream': (url, extra = {}) => ({ entropy: { source: 'upstream', upstream: { url, tokenFile: '/etc/q/token', ...extra } } }),
  'quality.entropyApi': (url, extra = {}) => ({ quality: { source: 'entropy-api', entropyApi: { url, tokenFile: '/etc/q/token', ...extra } } }),
  'feeder.sources.0': (url, extra = {}) => ({ feeder: { sources: [{ url, tokenFile: '/etc/q/token', ...extra }] } }),
  'kme.entropyApi': (url, extra = {}) => ({ kme: { ...kmeBase, entropyApi: { url, tokenFile: '/etc/q/token', ...extra } } }),
};

describe('http:// to an entropy API', () => {
  it('is refused for a non-loopback host in every block that sends a token, naming the key and the way out', () => {
    for (const [key, config] of Object.entries(blocks)) {
      for (const url of ['http://192.0.2.7:8443', 'http://qrng.example.net/', 'http://[2001:db8::1]:8443']) {
        const message = problem(() => resolveConfig(config(url)));
        expect(message).toContain(`${key}.url`);
        expect(message).toMatch(/in clear: use https:\/\/, or set allowInsecureHttp: true/);
      }
    }
    // The KME's message says what is really at stake: the seeds.
    expect(problem(() => resolveConfig(blocks['kme.entropyApi']!('http://192.0.2.7')))).toContain('the seeds of every key');
  });

  it('is accepted to loopback, over https:// anywhere, and with allowInsecureHttp: true', () => {
    for (const config of Object.values(blocks)) {
      for (const url of ['http://127.0.0.1:8443', 'http://localhost:8443', 'http://[::1]:8443', 'https://qrng.example.net']) {
        expect(() => resolveConfig(config(url))).not.toThrow();
      }
      expect(() => resolveConfig(config('http://192.0.2.7:8443', { allowInsecureHttp: true }))).not.toThrow();
    }
  });

  describe('allowed with allowInsecureHttp', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-insecure-'));
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('is logged as a warning when the role builds its sources', async () => {
      const lines: Array<{ level: number; msg: string }> = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
          done();
        },
      });
      const logger = pino({ level: 'info' }, sink);
      const feeder = resolveConfig({
        feeder: {
          enabled: true,
          sources: [{ url: 'http://192.0.2.7:8443', token: 'dev-token', allowInsecureHttp: true }],
          kernel: { enabled: false },
          files: [{ path: path.join(dir, 'seed.bin') }],
          status: { file: path.join(dir, 'status.json'), listen: false },
        },
      }).feeder;
      await buildFeeder(feeder, { logger, buffer: new FeedBuffer({ capacity: 8 * 1024 }) });
      const warning = lines.find((l) => l.level === 40 && l.msg.includes('INSECURE'));
      expect(warning?.msg).toContain('feeder.sources.0');
      expect(warning?.msg).toContain('http://192.0.2.7:8443');
    });
  });
});
