// SP 800-90B entropy assessment (docs/ea.md).
export { assessBytes, assessFile, EaInputError, ESTIMATORS, type AssessOptions, type EstimatorName, type Track } from './assess.js';
export { assessedMinEntropy, formatText, toJson, type EaJson } from './report.js';
export type { NativeAssessment } from './native.js';
export { cappedCredit, healthMinEntropy, readAssessment } from './credit.js';
