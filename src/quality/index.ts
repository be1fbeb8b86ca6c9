// The quality service (docs/quality.md): NIST STS runs every 10 minutes and the three
// quality APIs of spec part B.
export { buildQualityApp, type QualityAppOptions, type QualityTlsSettings } from './api.js';
export { bitsToText, textToBits } from './bitstring.js';
export { ENDPOINT_PARAMS, parseQuery, QueryError, NUM_DEFAULT, NUM_MAX, RANDSIZE_DEFAULT, RANDSIZE_MAX } from './query.js';
export { buildRecord, completionString, imfFixdate, simplify, type SimpleRecord, type TestResultRecord } from './record.js';
export { buildReport, QualityRunner, RunAbortedError, type RunnerOptions, type RunOutcome } from './run.js';
export { Scheduler, type SchedulerOptions } from './scheduler.js';
export { QualityService, type QualityServiceOptions } from './service.js';
export { EntropyApiSource, OwnPoolSource, PoolTapSource, type QualityBitSource } from './sources.js';
export { KEPT_BITS, QUALITY_MIGRATIONS, QualityStore, StorageUnavailableError, type NewRun } from './store.js';
export { formatRunReport } from './text-report.js';
