// src/deadline.ts: the request deadline that replaced AbortSignal.timeout on the hot paths
// (the entropy client's requests, the KME's deliveries to its peer).
import { getEventListeners, once } from 'node:events';

import { describe, expect, it } from 'vitest';

import { deadline } from '../src/deadline.js';

describe('deadline', () => {
  it('aborts with a TimeoutError once its time is up', async () => {
    const limit = deadline(5);
    await once(limit.signal, 'abort');
    expect((limit.signal.reason as Error).name).toBe('TimeoutError');
    expect((limit.signal.reason as Error).message).toMatch(/timeout \(5 ms\)/);
  });

  it('passes on its parent’s abort and reason, and lets go of the parent when cleared', () => {
    const parent = new AbortController();
    const limit = deadline(60_000, parent.signal);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    parent.abort(new Error('stopping'));
    expect(limit.signal.aborted).toBe(true);
    expect((limit.signal.reason as Error).message).toBe('stopping');
    limit.clear();

    const parent2 = new AbortController();
    const cleared = deadline(60_000, parent2.signal);
    cleared.clear();
    expect(getEventListeners(parent2.signal, 'abort')).toHaveLength(0);
    parent2.abort();
    expect(cleared.signal.aborted).toBe(false);
  });

  it('is aborted at once under a parent that already was', () => {
    const parent = AbortSignal.abort(new Error('already'));
    const limit = deadline(60_000, parent);
    expect((limit.signal.reason as Error).message).toBe('already');
    limit.clear();
  });
});
