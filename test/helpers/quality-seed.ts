// Quality runs for the page's tests, made by really running the battery (QualityRunner,
// the scheduler's own code) on generated data: good bits that pass, biased bits that fail
// both criteria, a batch whose second half repeats its first half (the repetition
// detector's case), and a source that is down (an error run). `fillDay` then spreads
// copies of those real runs over the last 24 hours, one every 10 minutes, as a day of a
// running service looks (144 runs).
import { QualityRunner } from '../../src/quality/run.js';
import type { QualityBitSource } from '../../src/quality/sources.js';
import type { NewRun, QualityStore } from '../../src/quality/store.js';
import { biasedBytes, prfBytes } from './bit-patterns.js';

/** NIST's recommended batch, as the service runs it. */
export const STREAMS = 100;
export const BITS_PER_STREAM = 1_000_000;
export const RUN_INTERVAL_MS = 600_000;

export type SeedKind = 'pass' | 'fail' | 'repeat' | 'error';

class GeneratedSource implements QualityBitSource {
  constructor(
    readonly name: string,
    private readonly make: (bytes: number) => Buffer,
  ) {}
  async draw(bytes: number): Promise<Buffer> {
    return this.make(bytes);
  }
  async close(): Promise<void> {}
}

/** A source that is down: every draw fails as a refused connection does (an error run). */
export class DownSource implements QualityBitSource {
  constructor(readonly name = 'test: source down') {}
  async draw(): Promise<Buffer> {
    throw new Error('connect ECONNREFUSED 127.0.0.1:9');
  }
  async close(): Promise<void> {}
}

let counter = 0;

export function sourceFor(kind: SeedKind): QualityBitSource {
  const seed = `page-${counter++}`; // fixed: the "pass" runs are known to pass both criteria
  switch (kind) {
    case 'pass':
      return new GeneratedSource('test: SHA-256 counter mode', (n) => prfBytes(n, seed));
    case 'fail':
      return new GeneratedSource('test: biased bits, P(1) = 0.51', (n) => biasedBytes(n, 0.51));
    case 'repeat':
      return new GeneratedSource('test: second half repeats the first', (n) => {
        const half = prfBytes(n / 2, seed);
        return Buffer.concat([half, half]);
      });
    case 'error':
      return new DownSource('test: source down');
  }
}

/** Runs the battery on `kind` data and stores the run as completing at `completedMs`. */
export async function seedRun(
  store: QualityStore,
  kind: SeedKind,
  completedMs: number,
  layout: { streams: number; bitsPerStream: number } = { streams: STREAMS, bitsPerStream: BITS_PER_STREAM },
): Promise<number> {
  const runner = new QualityRunner({
    store,
    source: sourceFor(kind),
    ...layout,
    threads: 2,
    now: () => completedMs,
  });
  return (await runner.run()).id;
}

/** Stores a copy of run `id` (its record, flags, report and kept bits) completing at `completedMs`. */
export async function copyRun(store: QualityStore, id: number, completedMs: number): Promise<number> {
  const row = (await store.getRunRow(id))!;
  const report = (await store.getReport(id))!;
  const layout = (report.layout as { streams: number; bitsPerStream: number } | undefined) ?? { streams: STREAMS, bitsPerStream: BITS_PER_STREAM };
  const record = row.record ? { ...row.record, time_of_completion: completedMs / 1000 } : undefined;
  const run: NewRun = {
    status: row.status,
    startedMs: completedMs - 3000,
    completedMs,
    source: String(report.source),
    streams: layout.streams,
    bitsPerStream: layout.bitsPerStream,
    strictlyFailing: row.strictlyFailing,
    looselyFailing: row.looselyFailing,
    repetitionFlagged: row.repetitionFlagged,
    report: { ...report, completed: new Date(completedMs).toISOString(), createdAt: new Date(completedMs).toUTCString(), ...(record ? { record } : {}) },
    ...(record ? { record } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
  };
  if (row.dataBits > 0) run.data = { bytes: await store.readData(id, 0, Math.ceil(row.dataBits / 8)), bits: row.dataBits, expiresMs: null };
  return store.insertRun(run);
}

export interface SeededDay {
  /** Ids of the really-run originals by kind. */
  real: Record<SeedKind, number>;
  /** Every run id on the timeline, oldest first (the originals included). */
  ids: number[];
  /** Ids whose run failed a criterion (strictly or loosely). */
  failing: number[];
}

/**
 * 144 runs, 10 minutes apart, ending at `endMs`: mostly passing, a few failing, repeating
 * or not tested. The newest is a real passing run; the other kinds are real runs too,
 * and the rest are copies of the real ones.
 */
export async function fillDay(store: QualityStore, endMs: number): Promise<SeededDay> {
  const at = (i: number): number => endMs - (143 - i) * RUN_INTERVAL_MS;
  const special: Record<number, SeedKind> = { 30: 'fail', 31: 'fail', 70: 'repeat', 100: 'error', 121: 'fail' };
  const real = {} as Record<SeedKind, number>;
  real.fail = await seedRun(store, 'fail', at(30));
  real.repeat = await seedRun(store, 'repeat', at(70));
  real.error = await seedRun(store, 'error', at(100));
  const firstPass = await seedRun(store, 'pass', at(0));
  const ids: number[] = [];
  for (let i = 0; i < 144; i++) {
    const kind = special[i] ?? 'pass';
    if (i === 0) ids.push(firstPass);
    else if (i === 143) ids.push((real.pass = await seedRun(store, 'pass', at(i))));
    else if (i === 30) ids.push(real.fail);
    else if (i === 70) ids.push(real.repeat);
    else if (i === 100) ids.push(real.error);
    else ids.push(await copyRun(store, kind === 'pass' ? firstPass : real[kind], at(i)));
  }
  const failing: number[] = [];
  for (const id of ids) if ((await store.getRunRow(id))!.looselyFailing) failing.push(id);
  return { real, ids, failing };
}
