// The criteria of product.md §5.2 on a small synthetic set of P-values, against numbers
// computed by hand (below, in the comments), never against our own earlier output. The
// battery's summarizer computes them; the quality service stores what it returns.
import { describe, expect, it } from 'vitest';

import { stsAddon, type NativeColumn } from '../src/sts/native.js';
import { buildRecord } from '../src/quality/record.js';

const M = 60;
const COLUMNS: NativeColumn[] = [
  { test: 'frequency', index: 0, label: '' },
  { test: 'cumulative_sums', index: 0, label: 'forward' },
  { test: 'cumulative_sums', index: 1, label: 'backward' },
];
const TESTS = ['frequency', 'cumulative_sums'] as const;

/** 60 P-values: `perBin[b]` values in bin b (at the bin's middle), the first `fails` of bin 0 below alpha. */
function column(perBin: number[], fails: number): number[] {
  const out: number[] = [];
  perBin.forEach((count, bin) => {
    for (let k = 0; k < count; k++) out.push(bin === 0 && k < fails ? 0.0009 * (k + 1) : bin / 10 + 0.05);
  });
  expect(out).toHaveLength(M);
  return out;
}

function summarize(frequencyFails: number, fingerprints?: string[]) {
  const cols = [
    // Frequency: histogram 10,4,6,6,6,6,6,6,6,4. Expected 6 per bin:
    // chi2 = (16 + 4 + 0 x 7 + 4) / 6 = 4; P_T = igamc(9/2, 2) = Q(chi2 = 4 | 9 d.f.). For odd d.f.:
    // Q = 2 Qn(2) + 2 phi(2) (2/1 + 2^3/3 + 2^5/15 + 2^7/105)
    //   = 2 (0.0227501319) + 2 (0.0539909665) (8.0190476190) = 0.9114125
    column([10, 4, 6, 6, 6, 6, 6, 6, 6, 4], frequencyFails),
    // Cumulative sums forward: 6 per bin, chi2 = 0, P_T = 1; two values below alpha.
    column([6, 6, 6, 6, 6, 6, 6, 6, 6, 6], 2),
    // Backward: all 60 in bin 5: chi2 = (9 x 36 + 54^2) / 6 = 540, P_T = igamc(4.5, 270) ~ 1e-110 < 0.0001.
    column([0, 0, 0, 0, 0, 60, 0, 0, 0, 0], 0),
  ];
  const p = new Float64Array(M * cols.length);
  for (let s = 0; s < M; s++) for (let c = 0; c < cols.length; c++) p[s * cols.length + c] = cols[c]![s]!;
  const fps = fingerprints ?? Array.from({ length: M }, (_, i) => i.toString(16).padStart(32, '0'));
  return stsAddon().stsSummarize(COLUMNS, TESTS, p, M, fps);
}

describe('criteria on hand-computed P-values', () => {
  it('NIST 10-bin chi-square, counts, minimum pass proportion, per-test uniformity', () => {
    const s = summarize(1);
    expect(s.subTests[0]!.histogram).toEqual([10, 4, 6, 6, 6, 6, 6, 6, 6, 4]);
    expect(s.subTests[0]!.uniformityP).toBeCloseTo(0.9114125, 6);
    expect(s.subTests[1]!.uniformityP).toBeCloseTo(1, 9);
    expect(s.subTests[2]!.uniformityP!).toBeLessThan(1e-100);
    // 180 results: fails 1 + 2 + 0 = 3, passes 177, rate 177/180 = 0.98333...
    // Minimum: 0.99 - 3 sqrt(0.01 x 0.99 / 180) = 0.99 - 3 x 0.00741620 = 0.96775139.
    const c = s.criteria;
    expect(c.nist_fails).toBe(3);
    expect(c.nist_passes).toBe(177);
    expect(c.nist_success_rate).toBeCloseTo(177 / 180, 12);
    expect(c.nist_min_pass_proportion).toBeCloseTo(0.96775139, 7);
    expect(c.nist_all_passed).toBe(true);
    // Frequency uniform; cumulative sums not (its backward sub-test): 1 pass, 1 fail.
    expect(c.uniformity_passes).toBe(1);
    expect(c.uniformity_fails).toBe(1);
    expect(c.uniformity_success_rate).toBe(0.5);
    expect(c.uniformity_all_passed).toBe(false);
    expect(c.tests_passed).toBe(true);
    expect(c.loosely_failing).toBe(true);
    expect(c.strictly_failing).toBe(false);
    // NIST's per-sub-test proportion: 59/60 = 0.983 >= 0.99 - 3 sqrt(0.0099/60) = 0.95146.
    expect(s.subTests[0]!.proportionOk).toBe(true);
    // The published record carries the same values.
    const record = buildRecord(c, Date.UTC(2025, 0, 1, 12, 0, 30, 500));
    expect(record).toMatchObject({ nist_fails: 3, nist_passes: 177, uniformity_passes: 1, uniformity_fails: 1, tests_passed: true });
  });

  it('too many individual failures fail the share criterion: both criteria failed is strict', () => {
    // Frequency now has 10 values below alpha (same histogram, same P_T): fails 12, passes 168,
    // rate 0.93333 < 0.96775; frequency's own proportion 50/60 = 0.833 < 0.95146.
    const s = summarize(10);
    expect(s.criteria.nist_fails).toBe(12);
    expect(s.criteria.nist_passes).toBe(168);
    expect(s.criteria.nist_all_passed).toBe(false);
    expect(s.criteria.uniformity_all_passed).toBe(false);
    expect(s.criteria.tests_passed).toBe(false);
    expect(s.criteria.strictly_failing).toBe(true);
    expect(s.subTests[0]!.proportionOk).toBe(false);
    expect(s.subTests[0]!.uniformityP).toBeCloseTo(0.9114125, 6);
  });

  it('identical sequences (same fingerprint) are reported as repetition', () => {
    const fps = Array.from({ length: M }, (_, i) => i.toString(16).padStart(32, '0'));
    fps[7] = fps[3]!;
    const s = summarize(1, fps);
    expect(s.repetition.identical).toEqual([[3, 7]]);
  });
});
