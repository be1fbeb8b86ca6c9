// Issue 30: the health gate runs off the event loop. While a source streams through the
// gate as fast as the gate can test it, `size=1` requests to the entropy API are served
// as quickly as with the gate idle (the tests used to run on the event loop: every
// 1 MiB read blocked it for tens of milliseconds). Both phases are measured in this test,
// against the same server; the bound is generous and nothing depends on which timer
// fires first.
import { randomFill } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { HealthGatedSource, type RawSource } from '../src/sources/health-gate.js';
import { createNativeTester } from '../src/sources/native-tester.js';
import type { Db } from '../src/storage/db.js';
import { call, FakeClock, makeToken, startTestServer, type TestServer } from './entropy-harness.js';
import { SqliteTestEngine } from './helpers/databases.js';
import { scaled } from './helpers/time.js';

function fill(buf: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => randomFill(buf, (err, filled) => (err ? reject(err) : resolve(filled))));
}
const MIB = 1024 * 1024;

/** A fast raw source: fresh random bytes, generated on the thread pool. */
class FastRandom implements RawSource {
  readonly name = 'fast-random';
  readonly development = false;
  async read(n: number): Promise<Buffer> {
    return fill(Buffer.allocUnsafeSlow(n));
  }
  async close(): Promise<void> {}
}

// The API's clock: moved on by a rate-limit window before each request, so that this
// many requests from one token are never a 429.
const clock = new FakeClock(Date.UTC(2026, 10, 26));

async function p99SizeOne(server: TestServer, token: string, requests: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < requests; i += 1) {
    clock.now += 11_000;
    const t0 = performance.now();
    const res = await call(server, '/api/v1/quantum-entropy?size=1', { token });
    times.push(performance.now() - t0);
    expect(res.status).toBe(200);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(0.99 * (times.length - 1))]!;
}

describe('health gate off the event loop', () => {
  const engine = new SqliteTestEngine();
  let db: Db;
  let server: TestServer;

  beforeAll(async () => {
    await engine.setup();
    db = await engine.open();
    server = await startTestServer({ db, poolCapacity: 64 * MIB, clock });
  });
  afterAll(async () => {
    await server.close();
    await db.close();
    await engine.teardown();
  });

  it('size=1 latency (p99) with the gate busy at full rate stays close to the gate idle', async () => {
    const { token } = await makeToken(server.store, 'latency');
    await p99SizeOne(server, token, 50); // warm up connections and the JIT
    const idle = await p99SizeOne(server, token, 300);

    const gate = new HealthGatedSource(new FastRandom(), { tester: createNativeTester(7.5) });
    let streaming = true;
    let tested = 0;
    const stream = (async () => {
      while (streaming) {
        const data = await gate.read(MIB);
        tested += data.length;
        data.fill(0);
      }
    })();
    // Busy before measuring: the first MiB has gone through the gate.
    while (tested < MIB) await new Promise((resolve) => setImmediate(resolve));
    const testedBefore = tested;
    const busy = await p99SizeOne(server, token, 300);
    const testedDuring = tested - testedBefore;
    streaming = false;
    await stream;
    await gate.close();

    // The gate really was busy throughout: at least 4 MiB tested while 300 requests ran.
    if (process.env.GATE_LATENCY_LOG) console.log({ idle, busy, testedDuring });
    expect(testedDuring).toBeGreaterThanOrEqual(4 * MIB);
    expect(gate.health().state).toBe('ok');
    // Generous: a busy second core and a loaded machine may cost something (the allowance
    // scales with QENTROPY_TEST_TIME_SCALE: CI beside other jobs measured 42 ms against an
    // idle 3 ms), but not the hundreds of milliseconds the gate on the event loop cost
    // (322 ms against 18 ms before issue 30).
    expect(busy).toBeLessThanOrEqual(4 * idle + scaled(40));
  }, 120_000);
});
