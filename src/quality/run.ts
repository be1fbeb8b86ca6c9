// One quality run: draw M x N bits, run the native battery off the event loop, build the
// record from the battery's criteria and store it with its report (and, for a loosely
// failing run, its first 5,242,880 tested bits) in one transaction. A source that fails
// or times out gives an error run, never a statistical failure.
import { runBattery } from '../sts/battery.js';
import type { BatteryResult, StsParams } from '../sts/types.js';
import { assessRunMinEntropy, type RunMinEntropy } from './min-entropy.js';
import { buildRecord, imfFixdate, unixSeconds, type TestResultRecord } from './record.js';
import type { QualityBitSource } from './sources.js';
import { KEPT_BITS, type NewRun, type QualityStore } from './store.js';

export interface RunnerOptions {
  store: QualityStore;
  source: QualityBitSource;
  /** M (default 100). */
  streams?: number;
  /** N (default 1,000,000; a multiple of 8). */
  bitsPerStream?: number;
  /** Battery worker threads (default 1; 0 = every core). */
  threads?: number;
  params?: StsParams;
  /** A draw slower than this becomes an error run (default 300 s). */
  drawTimeoutMs?: number;
  /** How long a passing run's bits are kept (default 0: not stored at all). */
  passingDataRetentionMs?: number;
  now?: () => number;
}

export type RunOutcome =
  | { id: number; status: 'completed'; record: TestResultRecord; strictlyFailing: boolean; looselyFailing: boolean; repetitionFlagged: boolean }
  | { id: number; status: 'error'; error: string };

/** The run was stopped (daemon shutting down): nothing was stored. */
export class RunAbortedError extends Error {
  override name = 'AbortError';
}

export class QualityRunner {
  readonly streams: number;
  readonly bitsPerStream: number;
  private readonly now: () => number;

  constructor(private readonly options: RunnerOptions) {
    this.streams = options.streams ?? 100;
    this.bitsPerStream = options.bitsPerStream ?? 1_000_000;
    if (!Number.isSafeInteger(this.streams) || this.streams < 1) throw new RangeError('streams must be a positive integer');
    if (!Number.isSafeInteger(this.bitsPerStream) || this.bitsPerStream < 8 || this.bitsPerStream % 8 !== 0) {
      throw new RangeError('bitsPerStream must be a positive multiple of 8');
    }
    this.now = options.now ?? Date.now;
  }

  /** Runs once and stores the outcome; rejects with RunAbortedError when `signal` aborts first. */
  async run(signal: AbortSignal = new AbortController().signal): Promise<RunOutcome> {
    const { source } = this.options;
    const bytes = (this.streams * this.bitsPerStream) / 8;
    const startedMs = this.now();
    const timeoutMs = this.options.drawTimeoutMs ?? 300_000;

    let data: Buffer;
    const drawStarted = performance.now();
    try {
      data = await source.draw(bytes, AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]));
    } catch (err) {
      if (signal.aborted) throw new RunAbortedError('the quality run was stopped while drawing bits', { cause: err });
      const lastFailure = source.lastFailure ? `; last failure: ${source.lastFailure}` : '';
      const reason = isTimeout(err)
        ? `source ${source.name} did not deliver ${bytes} bytes within ${Math.round(timeoutMs / 1000)} s${lastFailure}`
        : `source ${source.name} failed: ${errorText(err)}`;
      return this.storeError(startedMs, reason, { drawMs: performance.now() - drawStarted });
    }
    const drawMs = performance.now() - drawStarted;

    const batteryStarted = performance.now();
    const cpuStarted = process.cpuUsage();
    let result: BatteryResult;
    try {
      result = await runBattery(data, {
        streams: this.streams,
        bitsPerStream: this.bitsPerStream,
        threads: this.options.threads ?? 1,
        signal,
        ...(this.options.params ? { params: this.options.params } : {}),
      });
    } catch (err) {
      data.fill(0);
      if (signal.aborted) throw new RunAbortedError('the quality run was stopped during the battery', { cause: err });
      return this.storeError(startedMs, `the battery failed: ${errorText(err)}`, { drawMs });
    }
    const batteryMs = performance.now() - batteryStarted;
    const cpu = process.cpuUsage(cpuStarted);
    // SP 800-90B min-entropy of the same bytes. An assessment failure leaves it null and
    // never turns a completed STS run into an error run.
    const assessStarted = performance.now();
    let minEntropy: RunMinEntropy | null = null;
    let minEntropyError: string | undefined;
    try {
      minEntropy = await assessRunMinEntropy(data, this.options.threads ?? 1);
    } catch (err) {
      minEntropyError = errorText(err);
    }
    const assessMs = performance.now() - assessStarted;
    const completedMs = this.now();
    const criteria = result.summary.criteria;
    const record = buildRecord(criteria, completedMs);
    const keepMs = this.options.passingDataRetentionMs ?? 0;
    const keep = criteria.loosely_failing || keepMs > 0;
    const keptBits = Math.min(KEPT_BITS, this.streams * this.bitsPerStream);
    const run: NewRun = {
      status: 'completed',
      startedMs,
      completedMs,
      source: source.name,
      streams: this.streams,
      bitsPerStream: this.bitsPerStream,
      record,
      strictlyFailing: criteria.strictly_failing,
      looselyFailing: criteria.loosely_failing,
      repetitionFlagged: result.summary.repetition.flagged,
      minEntropy,
      report: buildReport(result, {
        source: source.name,
        startedMs,
        completedMs,
        record,
        timings: { drawMs, batteryMs, batteryCpuMs: (cpu.user + cpu.system) / 1000, assessMs },
        minEntropy,
        ...(minEntropyError ? { minEntropyError } : {}),
        threads: this.options.threads ?? 1,
        keptBits: keep ? keptBits : 0,
        keptUntilMs: keep && !criteria.loosely_failing ? completedMs + keepMs : null,
      }),
      ...(keep
        ? { data: { bytes: data.subarray(0, Math.ceil(keptBits / 8)), bits: keptBits, expiresMs: criteria.loosely_failing ? null : completedMs + keepMs } }
        : {}),
    };
    try {
      const id = await this.options.store.insertRun(run);
      return {
        id,
        status: 'completed',
        record,
        strictlyFailing: criteria.strictly_failing,
        looselyFailing: criteria.loosely_failing,
        repetitionFlagged: result.summary.repetition.flagged,
      };
    } finally {
      data.fill(0);
    }
  }

  private async storeError(startedMs: number, error: string, timings: { drawMs: number }): Promise<RunOutcome> {
    const completedMs = this.now();
    const id = await this.options.store.insertRun({
      status: 'error',
      startedMs,
      completedMs,
      source: this.options.source.name,
      streams: this.streams,
      bitsPerStream: this.bitsPerStream,
      error,
      report: {
        status: 'error',
        error,
        source: this.options.source.name,
        started: new Date(startedMs).toISOString(),
        completed: new Date(completedMs).toISOString(),
        time_of_completion: unixSeconds(completedMs),
        layout: { streams: this.streams, bitsPerStream: this.bitsPerStream },
        timings,
      },
    });
    return { id, status: 'error', error };
  }
}

interface ReportContext {
  source: string;
  startedMs: number;
  completedMs: number;
  record: TestResultRecord;
  timings: { drawMs: number; batteryMs: number; batteryCpuMs: number; assessMs: number };
  minEntropy: RunMinEntropy | null;
  minEntropyError?: string;
  threads: number;
  keptBits: number;
  keptUntilMs: number | null;
}

/** The full per-run report served at /api/v1/runs/{id} (docs/quality.md). */
export function buildReport(result: BatteryResult, ctx: ReportContext): Record<string, unknown> {
  const s = result.summary;
  return {
    status: 'completed',
    source: ctx.source,
    started: new Date(ctx.startedMs).toISOString(),
    completed: new Date(ctx.completedMs).toISOString(),
    createdAt: imfFixdate(ctx.completedMs),
    record: ctx.record,
    strictly_failing: s.criteria.strictly_failing,
    loosely_failing: s.criteria.loosely_failing,
    criteria: s.criteria,
    layout: { streams: result.streams, bitsPerStream: result.n },
    params: result.params,
    tests: result.tests,
    threads: ctx.threads,
    alpha: s.alpha,
    timings: {
      drawMs: round(ctx.timings.drawMs),
      batteryMs: round(ctx.timings.batteryMs),
      batteryCpuMs: round(ctx.timings.batteryCpuMs),
      assessMs: round(ctx.timings.assessMs),
    },
    /** SP 800-90B non-IID assessment of the run's first 10^6 bytes (docs/quality.md). */
    min_entropy: ctx.minEntropy,
    ...(ctx.minEntropyError ? { min_entropy_error: ctx.minEntropyError } : {}),
    uniformity: s.uniformity,
    proportionFlags: s.proportionFlags,
    uniformityFlags: s.uniformityFlags,
    repetition: s.repetition,
    subTests: s.subTests,
    /** Why tests were not applicable on some sequences (NIST's notes), by sequence. */
    sequenceNotes: result.sequences.flatMap((seq, i) => (seq.notes ? [{ sequence: i, notes: seq.notes }] : [])),
    keptBits: ctx.keptBits,
    keptUntil: ctx.keptUntilMs === null ? null : new Date(ctx.keptUntilMs).toISOString(),
  };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === 'TimeoutError' || (err as { cause?: Error }).cause?.name === 'TimeoutError');
}

function errorText(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n', 1)[0]!.slice(0, 500);
}
