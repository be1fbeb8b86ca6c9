// GET /page/v1/events?after=ID: server-sent events, one `run` event per new run, with the
// run's id as the event id. Runs after `after` (or after Last-Event-ID, which EventSource
// sends when it reconnects) are sent first, so a page misses nothing between its load and
// its stream, or across a dropped connection. One RunWatch serves every open stream.
// Streams are anonymous and long-lived, so they are bounded: at most `maxStreams` open at
// once and `maxStreamsPerClient` per client address (more get 503 with Retry-After), and
// each is ended after `lifetimeMs`; EventSource reconnects with Last-Event-ID and misses
// nothing.
import type { FastifyInstance } from 'fastify';

import { parseQuery } from '../quality/query.js';
import type { QualityStore } from '../quality/store.js';
import { RunWatch } from './run-watch.js';
import { timelineRun, type TimelineRun } from './view-model.js';

export interface EventStreamOptions {
  /** How often new runs are looked for while a stream is open (default 2 s). */
  watchIntervalMs?: number;
  /** Comment lines that keep idle streams open through proxies (default 25 s). */
  heartbeatMs?: number;
  /** Streams open at once, all clients together (default 100). */
  maxStreams?: number;
  /** Streams open at once from one client address (default 4). */
  maxStreamsPerClient?: number;
  /** A stream is ended after this long; the browser reconnects (default 10 min). */
  lifetimeMs?: number;
}

export const EVENT_STREAM_DEFAULTS = { maxStreams: 100, maxStreamsPerClient: 4, lifetimeMs: 600_000 } as const;

/** Retry-After of a refused stream; EventSource itself retries after `retry:` (5 s). */
const RETRY_AFTER_SECONDS = 10;

export function registerEventStream(app: FastifyInstance, store: QualityStore, options: EventStreamOptions = {}): void {
  const watch = new RunWatch(store, {
    intervalMs: options.watchIntervalMs,
    onError: (err) => app.log.warn({ err: (err as Error).message }, 'quality page: looking for new runs failed; will retry'),
  });
  const streams = new Set<() => void>();
  const perClient = new Map<string, number>();
  const maxStreams = options.maxStreams ?? EVENT_STREAM_DEFAULTS.maxStreams;
  const maxPerClient = options.maxStreamsPerClient ?? EVENT_STREAM_DEFAULTS.maxStreamsPerClient;
  const lifetimeMs = options.lifetimeMs ?? EVENT_STREAM_DEFAULTS.lifetimeMs;

  // Open streams never go idle: end them, or closing the server would wait for them.
  app.addHook('preClose', async () => {
    for (const end of [...streams]) end();
    watch.stop();
  });

  app.get('/page/v1/events', async (request, reply) => {
    const q = parseQuery(request.query, { after: { kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 } });
    const lastEventId = request.headers['last-event-id'];
    const after = typeof lastEventId === 'string' && /^[0-9]{1,15}$/.test(lastEventId) ? Number(lastEventId) : q.after;
    const headers = {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    };
    // HEAD (an uptime check): the stream's headers, and no stream held open.
    if (request.method === 'HEAD') return reply.code(200).headers(headers).send();
    // The baseline is fixed before the client sees `retry:`, so every run stored after that
    // line reaches it: a fresh page (no `after`) starts from the newest run stored now. It is
    // read before the caps are checked, so that from the check to `streams.add` nothing waits
    // and concurrent requests cannot pass a cap together.
    let seen = after;
    if (after === 0) {
      try {
        seen = await store.maxRunId();
      } catch (err) {
        app.log.warn({ err: (err as Error).message }, 'quality page: reading the newest run for an event stream failed');
      }
    }
    // A client gone during that read holds nothing: no stream is opened for it.
    if (request.socket.destroyed) return reply.hijack();
    const client = clientKey(request.socket.remoteAddress ?? 'unknown');
    const fromClient = perClient.get(client) ?? 0;
    if (streams.size >= maxStreams || fromClient >= maxPerClient) {
      const total = streams.size >= maxStreams;
      return reply
        .code(503)
        .header('retry-after', String(RETRY_AFTER_SECONDS))
        .type('application/json; charset=utf-8')
        .send({
          message: total ? 'too many open event streams; retry later' : 'too many open event streams from this address; close one or retry later',
          details: [total ? { limit: 'maxStreams', max: maxStreams } : { limit: 'maxStreamsPerClient', max: maxPerClient }],
        });
    }
    perClient.set(client, fromClient + 1);
    const res = reply.raw;
    reply.hijack();
    res.writeHead(200, headers);
    const send = (run: TimelineRun): void => {
      if (run.id <= seen || res.writableEnded) return;
      seen = run.id;
      res.write(`id: ${run.id}\nevent: run\ndata: ${JSON.stringify(run)}\n\n`);
    };
    res.write('retry: 5000\n\n');
    const heartbeat = setInterval(() => res.write(': still here\n\n'), options.heartbeatMs ?? 25_000);
    heartbeat.unref();
    // Live runs wait while the replay below is read, so ids go out in order and none is lost
    // between the baseline and the watch's own view of the store.
    let held: TimelineRun[] | undefined = [];
    const unsubscribe = watch.subscribe((run) => (held ? held.push(run) : send(run)), seen);
    const lifetime = setTimeout(() => end(), lifetimeMs);
    lifetime.unref();
    const end = (): void => {
      if (!streams.delete(end)) return;
      clearInterval(heartbeat);
      clearTimeout(lifetime);
      unsubscribe();
      const left = (perClient.get(client) ?? 1) - 1;
      if (left > 0) perClient.set(client, left);
      else perClient.delete(client);
      res.end();
    };
    streams.add(end);
    res.on('close', end);
    // Runs stored after what the client already has (its newest id, Last-Event-ID on a
    // reconnect, or the baseline above), read after subscribing so that nothing falls between.
    try {
      for (const row of await store.listRunRows({ afterId: seen, limit: 100 })) send(timelineRun(row));
    } catch (err) {
      app.log.warn({ err: (err as Error).message }, 'quality page: replaying runs to an event stream failed');
    }
    for (const run of held.sort((a, b) => a.id - b.id)) send(run);
    held = undefined;
  });
}

/**
 * Who a stream is counted against: an IPv4 address, or the /64 an IPv6 address is in (one
 * host usually holds a whole /64, so counting single IPv6 addresses would not cap it).
 */
export function clientKey(address: string): string {
  const bare = address.replace(/%.*$/, '').toLowerCase();
  if (!bare.includes(':')) return bare;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (mapped) return mapped[1]!;
  const [head = '', tail] = bare.split('::', 2);
  const groups = (part: string): string[] => (part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? front : [...front, ...Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back];
  return `${all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
