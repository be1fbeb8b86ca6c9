// Typed access to the STS functions of the addon (native/napi/sts.cc).
import { addon } from '../native/addon.js';
import type { QualityCriteria, StsParams, TestName } from './types.js';

export interface NativeColumn {
  test: TestName;
  index: number;
  label: string;
}

export interface NativeSummary {
  streams: number;
  alpha: number;
  subTests: {
    histogram: number[];
    sampleSize: number;
    passed: number;
    uniformityP: number | null;
    uniformityAssessed: boolean;
    uniformityOk: boolean;
    proportionOk: boolean;
  }[];
  uniformity: { test: TestName; verdict: 'passed' | 'failed' | 'excluded'; reason: string }[];
  criteria: QualityCriteria;
  proportionFlags: number;
  uniformityFlags: number;
  repetition: { identical: [number, number][]; periodBits: number };
}

export interface NativeBatteryResult {
  streams: number;
  bitsPerStream: number;
  tests: TestName[];
  columns: NativeColumn[];
  /** Row-major streams x columns; NaN = not applicable. */
  pValues: Float64Array;
  /** Per sequence, per test run: the test's note ("" when none). */
  notes: string[][];
  /** Per sequence: 128-bit fingerprint as 32 hex digits. */
  fingerprints: string[];
  periodBits: number;
  summary?: NativeSummary;
}

export interface NativeBatteryOptions {
  nbits?: number;
  streams: number;
  bitsPerStream?: number;
  params?: StsParams;
  tests?: readonly TestName[];
  threads?: number;
  alpha?: number;
  summarize?: boolean;
  /** Fingerprints and stream period (default true; off only for timing single tests). */
  repetitionCheck?: boolean;
}

interface StsAddon {
  stsRunBattery(
    data: Uint8Array,
    options: NativeBatteryOptions,
    onProgress?: (completed: number, total: number) => void,
  ): { promise: Promise<NativeBatteryResult>; cancel(): void };
  stsSummarize(
    columns: NativeColumn[],
    tests: readonly TestName[],
    pValues: Float64Array,
    streams: number,
    fingerprints: string[],
    alpha?: number,
  ): NativeSummary;
  stsRunTest(name: TestName, data: Uint8Array, nbits: number, params?: StsParams): { pValues: (number | null)[]; note: string };
  stsSubTests(name: TestName, params?: StsParams): string[];
  stsAperiodicTemplates(m: number): number[];
  stsCountOnes(data: Uint8Array): number;
  stsTestNames: string[];
}

/** The addon's STS functions; throws a clear error when the binary predates them. */
export function stsAddon(): StsAddon {
  const native = addon as Partial<StsAddon>;
  if (typeof native.stsRunBattery !== 'function') {
    throw new Error('this build of the qentropy addon has no NIST STS (rebuild with npm run build:native)');
  }
  return native as StsAddon;
}
