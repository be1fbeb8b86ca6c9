// GET /page/v1/events?after=ID: server-sent events, one `run` event per new run, with the
// run's id as the event id. Runs after `after` (or after Last-Event-ID, which EventSource
// sends when it reconnects) are sent first, so a page misses nothing between its load and
// its stream, or across a dropped connection. One RunWatch serves every open stream.
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
}

export function registerEventStream(app: FastifyInstance, store: QualityStore, options: EventStreamOptions = {}): void {
  const watch = new RunWatch(store, {
    intervalMs: options.watchIntervalMs,
    onError: (err) => app.log.warn({ err: (err as Error).message }, 'quality page: looking for new runs failed; will retry'),
  });
  const streams = new Set<() => void>();

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
    const res = reply.raw;
    reply.hijack();
    res.writeHead(200, headers);
    const send = (run: TimelineRun): void => void res.write(`id: ${run.id}\nevent: run\ndata: ${JSON.stringify(run)}\n\n`);
    res.write('retry: 5000\n\n');
    const heartbeat = setInterval(() => res.write(': still here\n\n'), options.heartbeatMs ?? 25_000);
    heartbeat.unref();
    let seen = after;
    const unsubscribe = watch.subscribe((run) => {
      if (run.id > seen) send(run);
      seen = Math.max(seen, run.id);
    });
    const end = (): void => {
      clearInterval(heartbeat);
      unsubscribe();
      streams.delete(end);
      res.end();
    };
    streams.add(end);
    res.on('close', end);
    // Runs stored after what the client already has (its newest id, or Last-Event-ID on a reconnect).
    if (after > 0) {
      try {
        for (const row of await store.listRunRows({ afterId: after, limit: 100 })) {
          if (row.id > seen) send(timelineRun(row));
          seen = Math.max(seen, row.id);
        }
      } catch (err) {
        app.log.warn({ err: (err as Error).message }, 'quality page: replaying runs to an event stream failed');
      }
    }
  });
}
