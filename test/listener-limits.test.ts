// Bounded listeners (issue 26 item 4), over real loopback connections held open: a
// listener past its connection cap answers 503 with Retry-After in the API's error shape
// and frees the slot when a connection goes; a flood past the hard cap is closed
// unanswered, so a client cannot exhaust the process's descriptors; the quality page's
// anonymous event streams are capped in total and per client address, and each ends
// after its lifetime. The KME listener counts its SAE connections with the same countConnections (src/listener).
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import pino from 'pino';

import { AccountStore } from '../src/accounts/index.js';
import { resolveConfig } from '../src/config/index.js';
import { capConnections } from '../src/listener/index.js';
import { EntropyPool } from '../src/pool/index.js';
import { buildQualityApp } from '../src/quality/api.js';
import { QualityStore } from '../src/quality/store.js';
import { clientKey } from '../src/quality-page/event-stream.js';
import { registerQualityPage } from '../src/quality-page/index.js';
import { FEEDER_STATUS_MAX_CONNECTIONS, FeederRole } from '../src/roles/feeder.js';
import { accountsFromStore } from '../src/server/account-store.js';
import { buildEntropyApp } from '../src/server/app.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import { devHealth, testTls } from './entropy-harness.js';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Reads one HTTP/1.1 response off a socket until the server closes it. */
function readAnswer(socket: net.Socket): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

const REQUEST = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n';

function connectTls(port: number, ca: string): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => resolve(socket));
    socket.once('error', reject);
  });
}

function connectPlain(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => resolve(socket));
    socket.once('error', reject);
  });
}

function portOf(server: net.Server): number {
  return (server.address() as net.AddressInfo).port;
}

describe('entropy listener connection cap', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-limits-'));
  let db: Db;
  let store: AccountStore;
  let app: FastifyInstance;
  let ca: string;
  /** Server-side sockets in the order their handshakes completed. */
  const accepted: tls.TLSSocket[] = [];

  beforeAll(async () => {
    const t = await testTls();
    ca = t.ca.certPem;
    db = await openDatabase({ url: `sqlite:${path.join(dir, 'accounts.db')}` });
    store = await AccountStore.open(db);
    await store.startServing();
    const pool = new EntropyPool({ capacity: 1024 * 1024 });
    app = await buildEntropyApp({
      pool,
      accounts: accountsFromStore(store),
      sourceHealth: devHealth,
      tls: { cert: t.cert, key: t.key },
      logger: false,
      maxConnections: 3,
    });
    app.server.on('secureConnection', (socket: tls.TLSSocket) => accepted.push(socket));
    await app.listen({ host: '127.0.0.1', port: 0 });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await store?.stopServing();
    await db?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 {message, details} with Retry-After past maxConnections, and serves again once a slot is free', async () => {
    const port = portOf(app.server);
    const held: tls.TLSSocket[] = [];
    for (let i = 0; i < 3; i += 1) held.push(await connectTls(port, ca));

    const extra = await connectTls(port, ca);
    const refused = readAnswer(extra);
    extra.write(REQUEST);
    const answer = await refused;
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    expect(answer.headers['content-type']).toContain('application/json');
    const body = JSON.parse(answer.body) as { message: string; details: unknown[] };
    expect(body.message).toMatch(/too many connections/);
    expect(body.details).toEqual([expect.objectContaining({ max_connections: 3 })]);

    // Let one held connection go and wait until the server has seen it close.
    const first = accepted[0]!;
    const gone = first.destroyed ? Promise.resolve() : new Promise((resolve) => first.once('close', resolve));
    held.shift()!.destroy();
    await gone;

    const next = await connectTls(port, ca);
    const served = readAnswer(next);
    next.write(REQUEST);
    expect((await served).status).toBe(200);
    for (const s of held) s.destroy();
  });

  it('answers a 20 KB request head with a JSON 431, not a framework body', async () => {
    const socket = await connectTls(portOf(app.server), ca);
    const answer = readAnswer(socket);
    socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const a = await answer;
    expect(a.status).toBe(431);
    expect(JSON.parse(a.body)).toMatchObject({ message: 'request headers too large', details: expect.any(Array) });
  });
});

describe('capConnections on any HTTP server (built on countConnections, which the KME listener uses too)', () => {
  let server: http.Server;
  let dropped = 0;

  beforeAll(async () => {
    server = http.createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    capConnections(server, { maxConnections: 2, rejectSlots: 2, retryAfterSeconds: 7, rejectTimeoutMs: 60_000 });
    server.on('drop', () => (dropped += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('holds at most maxConnections + rejectSlots sockets under a flood, serves the first ones and refuses the next with 503', async () => {
    const port = portOf(server);
    const sockets: net.Socket[] = [];
    const closedByServer: Promise<void>[] = [];
    for (let i = 0; i < 10; i += 1) {
      const s = await connectPlain(port);
      s.on('error', () => undefined);
      closedByServer.push(new Promise((resolve) => s.once('close', () => resolve())));
      sockets.push(s);
    }
    // The six past the hard cap are closed unanswered by the server.
    await Promise.all(closedByServer.slice(4));
    expect(dropped).toBe(6);
    const open = await new Promise<number>((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
    expect(open).toBe(4);

    const first = readAnswer(sockets[0]!);
    sockets[0]!.write(REQUEST);
    expect((await first).status).toBe(200);

    const third = readAnswer(sockets[2]!);
    sockets[2]!.write(REQUEST);
    const refused = await third;
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('7');
    for (const s of sockets) s.destroy();
  });
});

describe('quality page event streams', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-streams-'));
  let db: Db;
  let app: FastifyInstance;
  let shortLived: FastifyInstance;

  async function qualityApp(events: { maxStreams: number; maxStreamsPerClient: number; lifetimeMs: number }): Promise<FastifyInstance> {
    const store = await QualityStore.open(db);
    const a = await buildQualityApp({ store, logger: false });
    await registerQualityPage(a, { store, retentionDays: 7, watchIntervalMs: 60_000, heartbeatMs: 60_000, events });
    await a.listen({ host: '127.0.0.1', port: 0 });
    return a;
  }

  beforeAll(async () => {
    db = await openDatabase({ url: `sqlite:${path.join(dir, 'quality.db')}` });
    app = await qualityApp({ maxStreams: 3, maxStreamsPerClient: 2, lifetimeMs: 600_000 });
    shortLived = await qualityApp({ maxStreams: 1, maxStreamsPerClient: 1, lifetimeMs: 300 });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await shortLived?.close();
    await db?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Opens /page/v1/events from a given loopback address; resolves with the response once its head arrived. */
  function openStream(target: FastifyInstance, localAddress: string): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const request = http.get({ host: '127.0.0.1', port: portOf(target.server), path: '/page/v1/events', localAddress, agent: false }, resolve);
      request.on('error', reject);
    });
  }

  async function jsonOf(response: http.IncomingMessage): Promise<{ message: string; details: Array<Record<string, unknown>> }> {
    let text = '';
    for await (const chunk of response) text += String(chunk);
    return JSON.parse(text);
  }

  it('caps open streams per client address and in total with a JSON 503 and Retry-After, and frees a slot when a stream closes', async () => {
    const a1 = await openStream(app, '127.0.0.1');
    const a2 = await openStream(app, '127.0.0.1');
    expect([a1.statusCode, a2.statusCode]).toEqual([200, 200]);

    const a3 = await openStream(app, '127.0.0.1');
    expect(a3.statusCode).toBe(503);
    expect(a3.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    expect(await jsonOf(a3)).toMatchObject({ message: expect.stringMatching(/from this address/), details: [{ limit: 'maxStreamsPerClient', max: 2 }] });

    const b1 = await openStream(app, '127.0.0.2');
    expect(b1.statusCode).toBe(200);
    const c1 = await openStream(app, '127.0.0.3');
    expect(c1.statusCode).toBe(503);
    expect(await jsonOf(c1)).toMatchObject({ details: [{ limit: 'maxStreams', max: 3 }] });

    // Closing a stream frees its slot as soon as the server has seen the close.
    a1.destroy();
    let again = await openStream(app, '127.0.0.3');
    for (let tries = 0; again.statusCode === 503 && tries < 200; tries += 1) {
      again.resume();
      await new Promise((resolve) => again.once('end', resolve));
      again = await openStream(app, '127.0.0.3');
    }
    expect(again.statusCode).toBe(200);
    for (const r of [a2, b1, again]) r.destroy();
  });

  it('counts an IPv6 client by its /64 (one host usually holds all of it), an IPv4 one by its address', () => {
    expect(clientKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('192.0.2.7')).toBe('192.0.2.7');
  });

  it('ends a stream after its lifetime, which frees its slot', async () => {
    const first = await openStream(shortLived, '127.0.0.1');
    expect(first.statusCode).toBe(200);
    let text = '';
    first.on('data', (chunk: Buffer) => (text += chunk.toString()));
    await new Promise((resolve) => first.once('end', resolve));
    expect(text).toContain('retry: 5000');
    const second = await openStream(shortLived, '127.0.0.1');
    expect(second.statusCode).toBe(200);
    second.destroy();
  });
});

describe('feeder status listener', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qentropy-feeder-listener-'));
  let role: FeederRole;

  beforeAll(async () => {
    const config = resolveConfig({
      feeder: {
        enabled: true,
        // Nobody listens there: the source keeps retrying, the status listener serves.
        sources: [{ url: 'https://127.0.0.1:1', token: 'qe_unused' }],
        kernel: { enabled: false },
        files: [{ path: path.join(dir, 'seed.bin') }],
        status: { file: path.join(dir, 'status.json'), listen: { host: '127.0.0.1', port: 0 } },
      },
    }).feeder;
    role = new FeederRole(config, { logger: pino({ level: 'silent' }), stateDir: dir });
    await role.start();
  }, 60_000);

  afterAll(async () => {
    await role?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers an oversized request head and connections past its cap in its JSON error shape', async () => {
    const port = role.address!.port;
    const big = await connectPlain(port);
    const tooLarge = readAnswer(big);
    big.write(`GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const a = await tooLarge;
    expect(a.status).toBe(431);
    expect(JSON.parse(a.body)).toMatchObject({ message: 'request headers too large' });

    const held: net.Socket[] = [];
    for (let i = 0; i < FEEDER_STATUS_MAX_CONNECTIONS; i += 1) held.push(await connectPlain(port));
    const extra = await connectPlain(port);
    const refused = readAnswer(extra);
    extra.write(REQUEST);
    const answer = await refused;
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toBeDefined();
    expect(JSON.parse(answer.body)).toMatchObject({ message: expect.stringMatching(/too many connections/) });
    for (const s of held) s.destroy();
  });
});
