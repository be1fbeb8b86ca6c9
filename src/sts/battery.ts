// runBattery: the 15 NIST SP 800-22 tests over M sequences in native code, off the event
// loop, with the batch judged as NIST's finalAnalysisReport does and by the criteria of
// product.md §5.2 (docs/sts.md).
import { stsAddon, type NativeBatteryResult, type NativeColumn, type NativeSummary } from './native.js';
import {
  DEFAULT_PARAMS,
  PARAM_NAMES,
  TEST_NAMES,
  type BatteryResult,
  type BatterySummary,
  type RunBatteryOptions,
  type SequenceResult,
  type StsParams,
  type TestName,
} from './types.js';

/** Bad options or input (unknown test or parameter, streams that do not fit, ...). */
export class StsInputError extends RangeError {
  override name = 'StsInputError';
}

/** The run was cancelled through its AbortSignal. */
export class StsAbortError extends Error {
  override name = 'AbortError';
  readonly code = 'ABORT_ERR';
  constructor(message = 'the NIST STS run was aborted', options?: { cause?: unknown }) {
    super(message, options);
  }
}

export function isTestName(name: string): name is TestName {
  return (TEST_NAMES as readonly string[]).includes(name);
}

/** The parameters with NIST's defaults filled in; unknown names and non-integers are errors. */
export function resolveParams(params: StsParams | undefined): Required<StsParams> {
  const out = { ...DEFAULT_PARAMS };
  for (const [key, value] of Object.entries(params ?? {})) {
    if (!(PARAM_NAMES as string[]).includes(key)) {
      throw new StsInputError(`unknown parameter '${key}' (known: ${PARAM_NAMES.join(', ')})`);
    }
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new StsInputError(`parameter ${key} must be a positive integer`);
    }
    out[key as keyof StsParams] = value;
  }
  return out;
}

/** The tests to run, in NIST's order; unknown names are errors. */
export function resolveTests(tests: readonly string[] | undefined): TestName[] {
  if (tests === undefined) return [...TEST_NAMES];
  for (const t of tests) {
    if (!isTestName(t)) throw new StsInputError(`unknown test '${t}' (known: ${TEST_NAMES.join(', ')})`);
  }
  if (tests.length === 0) throw new StsInputError('no tests selected');
  return TEST_NAMES.filter((t) => tests.includes(t));
}

/** How many bits each of `streams` sequences has, checked against the bits available. */
export function resolveLayout(totalBits: number, streams: number | undefined, bitsPerStream: number | undefined) {
  const m = streams ?? 1;
  if (!Number.isSafeInteger(m) || m < 1) throw new StsInputError('streams must be a positive integer');
  if (bitsPerStream !== undefined && (!Number.isSafeInteger(bitsPerStream) || bitsPerStream < 1)) {
    throw new StsInputError('bitsPerStream must be a positive integer');
  }
  const n = bitsPerStream ?? Math.floor(totalBits / m);
  if (n < 1) throw new StsInputError(`${m} streams do not fit in ${totalBits} bits`);
  if (m * n > totalBits) {
    throw new StsInputError(`${m} streams of ${n} bits need ${m * n} bits; only ${totalBits} given`);
  }
  return { streams: m, bitsPerStream: n };
}

export interface NativeRunOptions {
  streams: number;
  bitsPerStream: number;
  bitCount: number;
  params: Required<StsParams>;
  tests: TestName[];
  threads: number;
  summarize: boolean;
  signal?: AbortSignal;
  onProgress?: (completed: number, total: number) => void;
}

/** One native run, with the AbortSignal wired to the native cancel flag. */
export async function runNative(data: Uint8Array, o: NativeRunOptions): Promise<NativeBatteryResult> {
  if (o.signal?.aborted) throw new StsAbortError(undefined, { cause: o.signal.reason });
  const handle = stsAddon().stsRunBattery(
    data,
    {
      nbits: o.bitCount,
      streams: o.streams,
      bitsPerStream: o.bitsPerStream,
      params: o.params,
      tests: o.tests,
      threads: o.threads,
      summarize: o.summarize,
    },
    o.onProgress,
  );
  const onAbort = () => handle.cancel();
  o.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await handle.promise;
  } catch (err) {
    if ((err as { code?: string }).code === 'ABORT_ERR') throw new StsAbortError(undefined, { cause: o.signal?.reason });
    throw new StsInputError((err as Error).message);
  } finally {
    o.signal?.removeEventListener('abort', onAbort);
  }
}

function threadsOption(threads: number | undefined): number {
  const t = threads ?? 1;
  if (!Number.isSafeInteger(t) || t < 0 || t > 1024) throw new StsInputError('threads must be an integer from 0 to 1024');
  return t;
}

/**
 * Runs the battery on packed bits (most significant bit of each byte first; raw bytes are
 * the same thing): sequence s is bits [s N, (s + 1) N). The native work runs on its own
 * threads; `bits` must not be modified until the promise settles.
 */
export async function runBattery(bits: Uint8Array, options: RunBatteryOptions = {}): Promise<BatteryResult> {
  const params = resolveParams(options.params);
  const tests = resolveTests(options.tests);
  const available = bits.length * 8;
  const bitCount = options.bitCount ?? available;
  if (!Number.isSafeInteger(bitCount) || bitCount < 0 || bitCount > available) {
    throw new StsInputError(`bitCount must be an integer from 0 to ${available}`);
  }
  const layout = resolveLayout(bitCount, options.streams, options.bitsPerStream);
  const onProgress = options.onProgress;
  const result = await runNative(bits, {
    ...layout,
    bitCount,
    params,
    tests,
    threads: threadsOption(options.threads),
    summarize: true,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(onProgress ? { onProgress: (completed: number, total: number) => onProgress({ completed, total }) } : {}),
  });
  return assembleResult([result], params, layout.bitsPerStream);
}

/** Merges the native results of consecutive chunks of one batch into the API's result. */
export function assembleResult(
  parts: NativeBatteryResult[],
  params: Required<StsParams>,
  n: number,
): BatteryResult {
  const first = parts[0];
  if (!first) throw new StsInputError('no sequences were tested');
  const columns = first.columns;
  const tests = first.tests;
  const sequences: SequenceResult[] = [];
  for (const part of parts) {
    for (let s = 0; s < part.streams; s++) sequences.push(sequenceResult(part, s));
  }
  let native: NativeSummary;
  if (parts.length === 1 && first.summary) {
    native = first.summary;
  } else {
    const streams = parts.reduce((sum, p) => sum + p.streams, 0);
    const pValues = new Float64Array(streams * columns.length);
    let offset = 0;
    for (const p of parts) {
      pValues.set(p.pValues, offset);
      offset += p.pValues.length;
    }
    const fingerprints = parts.flatMap((p) => p.fingerprints);
    native = stsAddon().stsSummarize(columns, tests, pValues, streams, fingerprints);
    // A period is looked for inside each chunk (each holds whole sequences).
    native.repetition.periodBits = parts.find((p) => p.periodBits > 0)?.periodBits ?? 0;
  }
  return {
    n,
    streams: sequences.length,
    params,
    tests,
    sequences,
    summary: toSummary(native, columns),
  };
}

function sequenceResult(part: NativeBatteryResult, s: number): SequenceResult {
  const ncols = part.columns.length;
  const tests: SequenceResult['tests'] = {};
  for (let c = 0; c < ncols; c++) {
    const col = part.columns[c]!;
    const p = part.pValues[s * ncols + c]!;
    (tests[col.test] ??= []).push(Number.isNaN(p) ? null : p);
  }
  const out: SequenceResult = { tests };
  const row = part.notes[s] ?? [];
  row.forEach((note, t) => {
    if (note) (out.notes ??= {})[part.tests[t]!] = note;
  });
  return out;
}

function toSummary(native: NativeSummary, columns: NativeColumn[]): BatterySummary {
  return {
    streams: native.streams,
    alpha: native.alpha,
    criteria: { ...native.criteria },
    subTests: native.subTests.map((st, i) => ({
      test: columns[i]!.test,
      index: columns[i]!.index,
      label: columns[i]!.label,
      ...st,
    })),
    uniformity: native.uniformity,
    proportionFlags: native.proportionFlags,
    uniformityFlags: native.uniformityFlags,
    repetition: {
      identical: native.repetition.identical,
      periodBits: native.repetition.periodBits,
      flagged: native.repetition.identical.length > 0 || native.repetition.periodBits > 0,
    },
  };
}

/**
 * One test on one (small) sequence, synchronously on the calling thread: P-values in NIST's
 * order (null = not applicable) and NIST's note. For long sequences use runBattery.
 */
export function runTest(
  name: TestName,
  bits: Uint8Array,
  options: { bitCount?: number; params?: StsParams } = {},
): { pValues: (number | null)[]; note: string } {
  if (!isTestName(name)) throw new StsInputError(`unknown test '${String(name)}'`);
  const bitCount = options.bitCount ?? bits.length * 8;
  if (!Number.isSafeInteger(bitCount) || bitCount < 0 || bitCount > bits.length * 8) {
    throw new StsInputError(`bitCount must be an integer from 0 to ${bits.length * 8}`);
  }
  return stsAddon().stsRunTest(name, bits, bitCount, resolveParams(options.params));
}

/** The aperiodic templates of length m (2..21) in NIST's order, as m-bit integers, first bit most significant. */
export function aperiodicTemplates(m: number): number[] {
  if (!Number.isInteger(m) || m < 2 || m > 21) throw new StsInputError('template length m must be from 2 to 21');
  return stsAddon().stsAperiodicTemplates(m);
}

/** Labels of a test's sub-tests with these parameters, in NIST's order. */
export function subTestLabels(name: TestName, params?: StsParams): string[] {
  return stsAddon().stsSubTests(name, resolveParams(params));
}
