// The combining mode (`feeder.combine: "all"`): every source is pulled on its own, each
// through its own health tests (FeederSource.pull), into a small staging ring of its own;
// each output is SHA-256 over 64 bytes from every source in use (conditioning.ts), so no
// single provider controls or knows what reaches the sinks. A source drops out while it is
// not active (retrying, disabled, stopped); `onDropOut` decides whether outputs go on from
// the rest, with the credit recomputed, or stop until every source is back. Each change of
// the set in use is logged once, and shown in status and metrics (docs/feeder.md).
import type { Logger } from 'pino';

import { BLOCK_SIZE } from '../client/index.js';
import { FeedBuffer } from './buffer.js';
import { combinedCredit, condition, CONDITIONED_BYTES, INPUT_BYTES_PER_SOURCE, type CombinedCredit } from './conditioning.js';
import type { FeederSource } from './source.js';

export type CombineMode = 'failover' | 'all';
export type DropOutPolicy = 'continue' | 'stop';

export interface CombineStatus {
  mode: 'all';
  onDropOut: DropOutPolicy;
  /** combining: outputs are made; stopped: a source is out and the policy is stop; waiting: no source in use. */
  state: 'combining' | 'stopped' | 'waiting';
  /** Sources whose bytes go into each output now, in config order. */
  inUse: string[];
  /** Sources out of the combination now. */
  droppedOut: string[];
  /** Conditioned outputs (32 bytes each) made. */
  outputs: number;
  /** Times a source left the combination. */
  dropOuts: number;
  /** The credit of one output from the sources in use (SP 800-90B §3.1.5.1.2). */
  credit: CombinedCredit;
}

interface Lane {
  source: FeederSource;
  /** Assessed min-entropy per byte of this source (0: not assessed, credited nothing). */
  assessedPerByte: number;
  /** Bytes that passed this source's tests, waiting to be conditioned. */
  staged: FeedBuffer;
}

/** Puts one conditioned output into the feeder's buffer with its credit; resolves once it is in. */
export type PutOutput = (output: Buffer, creditBitsPerByte: number) => Promise<void>;

/**
 * The credit of the bytes in the feeder's buffer, in order: outputs made before a drop-out
 * keep their higher credit, those made after carry the lower one, and a sink taking bytes
 * is told the lowest credit among them.
 */
export class CreditQueue {
  private segments: Array<{ bytes: number; credit: number }> = [];

  push(bytes: number, credit: number): void {
    if (bytes <= 0) return;
    const last = this.segments.at(-1);
    if (last && last.credit === credit) last.bytes += bytes;
    else this.segments.push({ bytes, credit });
  }

  /** Removes `bytes` from the front; the lowest credit among them (undefined: none tracked). */
  take(bytes: number): number | undefined {
    let lowest: number | undefined;
    while (bytes > 0 && this.segments.length > 0) {
      const head = this.segments[0]!;
      lowest = lowest === undefined ? head.credit : Math.min(lowest, head.credit);
      const n = Math.min(bytes, head.bytes);
      head.bytes -= n;
      bytes -= n;
      if (head.bytes === 0) this.segments.shift();
    }
    return lowest;
  }

  clear(): void {
    this.segments = [];
  }
}

export class SourceCombiner {
  readonly status: CombineStatus;
  private readonly lanes: Lane[];
  private readonly waiters = new Set<() => void>();

  constructor(
    sources: readonly FeederSource[],
    assessedPerByte: readonly number[],
    private readonly onDropOut: DropOutPolicy,
    private readonly logger: Logger,
  ) {
    this.lanes = sources.map((source, i) => ({
      source,
      assessedPerByte: assessedPerByte[i] ?? 0,
      // Room for a whole request of the source, plus what waits for the other sources.
      staged: new FeedBuffer({ capacity: Math.max(4 * BLOCK_SIZE, 2 * source.blocksPerRequest * BLOCK_SIZE) }),
    }));
    // All in use until one is seen out: the first change logged is a drop-out.
    this.status = {
      mode: 'all',
      onDropOut,
      state: 'combining',
      inUse: this.lanes.map((l) => l.source.url),
      droppedOut: [],
      outputs: 0,
      dropOuts: 0,
      credit: combinedCredit(this.lanes.map((l) => l.assessedPerByte)),
    };
  }

  /** A source's state changed (retrying, disabled, recovered, ...): look at the set in use again. */
  sourceChanged(): void {
    this.wake();
  }

  /** Zeroes what a source found not random had staged: none of it may be used. */
  distrust(url: string): void {
    for (const lane of this.lanes) if (lane.source.url === url) lane.staged.clear();
  }

  /** Pulls every source and conditions their bytes into `put` until `signal` aborts. */
  async run(put: PutOutput, room: () => number, roomChanged: (signal: AbortSignal) => Promise<void>, signal: AbortSignal): Promise<void> {
    const pulls = this.lanes.map((lane) => this.pullLoop(lane, signal));
    try {
      while (!signal.aborted) {
        const inUse = this.lanes.filter((l) => l.source.status.state === 'active');
        this.track(inUse);
        const ready = inUse.length > 0 && this.status.state === 'combining' && inUse.every((l) => l.staged.level >= INPUT_BYTES_PER_SOURCE);
        if (!ready || room() < CONDITIONED_BYTES) {
          await Promise.race([this.changed(signal), roomChanged(signal)]);
          continue;
        }
        const inputs = inUse.map((l) => l.staged.take(INPUT_BYTES_PER_SOURCE));
        const output = condition(inputs);
        for (const input of inputs) input.fill(0);
        this.status.outputs += 1;
        await put(output, this.status.credit.creditBitsPerByte);
      }
    } finally {
      this.wake();
      await Promise.all(pulls);
      for (const lane of this.lanes) lane.staged.release();
    }
  }

  /** One source: pull whenever its staging has room for a block, each pull through its tests. */
  private async pullLoop(lane: Lane, signal: AbortSignal): Promise<void> {
    const { source, staged } = lane;
    while (!signal.aborted) {
      if (staged.room < BLOCK_SIZE) {
        await staged.changed(signal);
        continue;
      }
      if (!source.available()) {
        this.wake();
        await this.untilRetry(source, signal);
        continue;
      }
      try {
        const passed = await source.pull(staged.room, signal);
        let rest = passed;
        while (rest.length > 0 && !signal.aborted) {
          rest = rest.subarray(staged.put(rest));
          if (rest.length > 0) await staged.changed(signal);
        }
        passed.fill(0);
      } catch {
        // Logged by the source's events; its state says whether it is still in use.
      }
      this.wake();
    }
  }

  /** Follows the set of sources in use; logs each change once. */
  private track(inUse: readonly Lane[]): void {
    const urls = inUse.map((l) => l.source.url);
    const everyone = inUse.length === this.lanes.length;
    const state: CombineStatus['state'] = inUse.length === 0 ? 'waiting' : everyone || this.onDropOut === 'continue' ? 'combining' : 'stopped';
    const same = urls.length === this.status.inUse.length && urls.every((u, i) => u === this.status.inUse[i]);
    if (same && state === this.status.state) return;
    const left = this.status.inUse.filter((u) => !urls.includes(u));
    const back = urls.filter((u) => !this.status.inUse.includes(u));
    this.status.dropOuts += left.length;
    this.status.inUse = urls;
    this.status.droppedOut = this.lanes.filter((l) => !inUse.includes(l)).map((l) => l.source.url);
    this.status.credit = combinedCredit(inUse.map((l) => l.assessedPerByte));
    this.status.state = state;
    const fields = {
      inUse: urls,
      droppedOut: this.status.droppedOut,
      creditBitsPerByte: this.status.credit.creditBitsPerByte,
      outputEntropyBits: Number(this.status.credit.outputEntropyBits.toFixed(3)),
    };
    const out = this.status.droppedOut.join(', ');
    if (state === 'waiting') {
      this.logger.error(fields, 'combining: no source can be used; the sinks are fed from the buffer until it runs dry');
    } else if (state === 'stopped') {
      this.logger.error(fields, `combining stopped: ${out} out (feeder.onDropOut is "stop"); the sinks get nothing new until every source is back`);
    } else if (left.length > 0) {
      this.logger.warn(fields, `combining: ${left.join(', ')} dropped out; going on from ${urls.length} source${urls.length === 1 ? '' : 's'}, credit now ${this.status.credit.creditBitsPerByte} bits per byte`);
    } else {
      this.logger.info(fields, `combining: ${back.join(', ') || 'every source'} back; ${urls.length} source${urls.length === 1 ? '' : 's'} in use, credit ${this.status.credit.creditBitsPerByte} bits per byte`);
    }
  }

  /** Waits until a disabled source may be tried again (a stopped one: until the feeder stops). */
  private async untilRetry(source: FeederSource, signal: AbortSignal): Promise<void> {
    const retryAt = source.status.state === 'disabled' ? (source.status.retryAt ?? 0) : Number.POSITIVE_INFINITY;
    await new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const ms = Math.max(0, retryAt - Date.now());
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      function done(): void {
        if (timer) clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = (): void => {
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }
}
