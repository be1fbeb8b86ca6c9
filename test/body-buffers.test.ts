// Recycled response bodies (src/server/body-buffers.ts) over a real node:http server on
// 127.0.0.1: a body is reused only after its response went out, and is zeroed first.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { BodyBuffers } from '../src/server/body-buffers.js';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function serve(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

async function fetchBytes(url: string): Promise<Buffer> {
  return Buffer.from(await (await fetch(url)).arrayBuffer());
}

describe('BodyBuffers', () => {
  it('takes a body back after its response was sent, zeroed, and hands it out again', async () => {
    const bodies = new BodyBuffers();
    const handedOut: Buffer[] = [];
    let n = 0;
    const url = await serve((_req, res) => {
      const body = bodies.acquireFor(res, 700_000);
      handedOut.push(body);
      body.fill(0x41 + n++);
      res.end(body);
    });
    const first = await fetchBytes(url);
    expect(first.equals(Buffer.alloc(700_000, 0x41))).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(bodies.heldBytes).toBe(700_000);
    expect(handedOut[0]!.every((b) => b === 0)).toBe(true);
    const second = await fetchBytes(url);
    // The client got the second body whole, written into the same memory as the first.
    expect(second.equals(Buffer.alloc(700_000, 0x42))).toBe(true);
    expect(handedOut[1]!.buffer).toBe(handedOut[0]!.buffer);
  });

  it('never reuses a body whose response was cut off, and zeroes it', async () => {
    const bodies = new BodyBuffers();
    let body: Buffer | undefined;
    const closed = new Promise<void>((resolve) => {
      void serve((req, res) => {
        body = bodies.acquireFor(res, 8 * 1024 * 1024);
        body.fill(0x55);
        res.on('close', () => setImmediate(resolve));
        // The client goes away before the body is written.
        req.socket.destroy();
        res.end(body);
      }).then((url) => fetch(url).catch(() => undefined));
    });
    await closed;
    expect(body!.every((b) => b === 0)).toBe(true);
    expect(bodies.heldBytes).toBe(0);
  });

  it('keeps at most maxFreeBytes for reuse', async () => {
    const bodies = new BodyBuffers(1_000_000);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let waiting = 0;
    const url = await serve((_req, res) => {
      const body = bodies.acquireFor(res, 600_000).fill(1);
      // Hold both responses until both bodies are out, so neither can reuse the other.
      if (++waiting === 2) release();
      void gate.then(() => res.end(body));
    });
    await Promise.all([fetchBytes(url), fetchBytes(url)]);
    await new Promise((r) => setImmediate(r));
    expect(bodies.heldBytes).toBe(600_000);
  });
});
