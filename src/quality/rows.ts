// A stored run row back to the published record (integers stored as 0/1 become booleans).
import { completionString, unixSeconds, type TestResultRecord } from './record.js';

export interface RecordColumns {
  completed_ms: number;
  tests_passed: number;
  nist_all_passed: number;
  nist_fails: number;
  nist_passes: number;
  nist_success_rate: number | null;
  uniformity_all_passed: number;
  uniformity_fails: number;
  uniformity_passes: number;
  uniformity_success_rate: number | null;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function buildRecordFromRow(row: RecordColumns): TestResultRecord {
  const ms = Number(row.completed_ms);
  return {
    tests_passed: Boolean(Number(row.tests_passed)),
    time_of_completion: unixSeconds(ms),
    time_of_completion_string: completionString(ms),
    nist_all_passed: Boolean(Number(row.nist_all_passed)),
    nist_fails: Number(row.nist_fails),
    nist_passes: Number(row.nist_passes),
    nist_success_rate: num(row.nist_success_rate),
    uniformity_all_passed: Boolean(Number(row.uniformity_all_passed)),
    uniformity_fails: Number(row.uniformity_fails),
    uniformity_passes: Number(row.uniformity_passes),
    uniformity_success_rate: num(row.uniformity_success_rate),
  };
}
