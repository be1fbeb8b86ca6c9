// The `quality` config section: defaults, validation naming the key, environment overrides.
import { describe, expect, it } from 'vitest';

import { ConfigError, resolveConfig } from '../src/config/index.js';

const problems = (raw: unknown, env: Record<string, string> = {}): string[] => {
  try {
    resolveConfig(raw, { env });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
};

describe('quality config', () => {
  it('defaults: disabled, every 600 s, 100 x 10^6 bits, pool, 90 days, passing bits not kept', () => {
    const q = resolveConfig({}, { env: {} }).quality;
    expect(q).toMatchObject({
      enabled: false,
      intervalSeconds: 600,
      firstRunDelaySeconds: 0,
      streams: 100,
      bitsPerStream: 1_000_000,
      threads: 1,
      source: 'pool',
      retentionDays: 90,
      passingDataRetentionDays: 0,
      listen: { host: '127.0.0.1', port: 8444 },
    });
  });

  it('names the key of every problem', () => {
    const found = problems({
      quality: { enabled: true, bitsPerStream: 1001, streams: 0, source: 'entropy-api', intervalSeconds: 'often', colour: 1 },
    });
    const text = found.join('\n');
    expect(text).toMatch(/quality\.bitsPerStream: must be a multiple of 8/);
    expect(text).toMatch(/quality\.streams: expected an integer/);
    expect(text).toMatch(/quality\.entropyApi: is required/);
    expect(text).toMatch(/quality\.intervalSeconds: expected an integer/);
    expect(text).toMatch(/quality\.colour: unknown key/);
    expect(text).toMatch(/quality\.tls: certFile and keyFile are required/);
  });

  it('accepts an entropy API source and environment overrides', () => {
    const q = resolveConfig(
      { quality: { enabled: true, plainHttp: true, source: 'entropy-api', entropyApi: { url: 'https://provider.example', tokenFile: '/etc/t' } } },
      { env: { QENTROPY_QUALITY_STREAMS: '60', QENTROPY_QUALITY_LISTEN_PORT: '9444' } },
    ).quality;
    expect(q.entropyApi).toEqual({ url: 'https://provider.example', tokenFile: '/etc/t', blocksPerRequest: 512 });
    expect(q.streams).toBe(60);
    expect(q.listen.port).toBe(9444);
    expect(problems({ quality: { localSource: 'upstream' } }).join()).toMatch(/quality\.localSource/);
  });
});
