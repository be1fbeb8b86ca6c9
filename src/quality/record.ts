// The published test result record (spec part B, product.md §5.2) and its time formats.
import type { QualityCriteria } from '../sts/types.js';

/** One run as the logs and failing_logs APIs return it. */
export interface TestResultRecord {
  tests_passed: boolean;
  /** Unix seconds with fractions (milliseconds). */
  time_of_completion: number;
  /** `MM/DD/YYYY HH:MM`, UTC. */
  time_of_completion_string: string;
  nist_all_passed: boolean;
  nist_fails: number;
  nist_passes: number;
  nist_success_rate: number | null;
  uniformity_all_passed: boolean;
  uniformity_fails: number;
  uniformity_passes: number;
  uniformity_success_rate: number | null;
}

/** The simplified form (`simple=true`). */
export type SimpleRecord = Pick<TestResultRecord, 'tests_passed' | 'time_of_completion' | 'time_of_completion_string'>;

const pad2 = (n: number): string => String(n).padStart(2, '0');

/** `MM/DD/YYYY HH:MM` in UTC, as the provider writes it. */
export function completionString(ms: number): string {
  const d = new Date(ms);
  return `${pad2(d.getUTCMonth() + 1)}/${pad2(d.getUTCDate())}/${d.getUTCFullYear()} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}`;
}

/** RFC 9110 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT` (what Date#toUTCString prints). */
export function imfFixdate(ms: number): string {
  return new Date(ms).toUTCString();
}

/** Unix seconds with the milliseconds as fraction. */
export function unixSeconds(ms: number): number {
  return ms / 1000;
}

/** The record of a completed run, from the battery's criteria (never recomputed here). */
export function buildRecord(criteria: QualityCriteria, completedMs: number): TestResultRecord {
  return {
    tests_passed: criteria.tests_passed,
    time_of_completion: unixSeconds(completedMs),
    time_of_completion_string: completionString(completedMs),
    nist_all_passed: criteria.nist_all_passed,
    nist_fails: criteria.nist_fails,
    nist_passes: criteria.nist_passes,
    nist_success_rate: criteria.nist_success_rate,
    uniformity_all_passed: criteria.uniformity_all_passed,
    uniformity_fails: criteria.uniformity_fails,
    uniformity_passes: criteria.uniformity_passes,
    uniformity_success_rate: criteria.uniformity_success_rate,
  };
}

export function simplify(record: TestResultRecord): SimpleRecord {
  return {
    tests_passed: record.tests_passed,
    time_of_completion: record.time_of_completion,
    time_of_completion_string: record.time_of_completion_string,
  };
}
