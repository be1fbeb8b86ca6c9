// NIST SP 800-22 statistical tests (docs/sts.md).
export {
  aperiodicTemplates,
  resolveParams,
  resolveTests,
  runBattery,
  runTest,
  StsAbortError,
  StsInputError,
  subTestLabels,
} from './battery.js';
export {
  DEFAULT_SEQUENCE_BITS,
  inspectSequenceFile,
  readSequenceFile,
  runBatteryOnFile,
  type RunFileOptions,
  type SequenceChunk,
  type SequenceFileLayout,
  type SequenceFileOptions,
  type SequenceFormat,
} from './file.js';
export { formatReport, NIST_TEST_NAMES, reportLine, summaryJson, toJson, type ReportOptions } from './report.js';
export * from './types.js';
