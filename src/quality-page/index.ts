// The quality service's page (docs/quality.md, "Reading the quality page"): a live view of
// the runs at / on the quality listener, and the same run view as a self-contained HTML file.
export { renderHtmlReport, reportCsp, writeHtmlReport } from './html-report.js';
export { PAGE_CSP, registerQualityPage, type PageSchedule, type QualityPageOptions } from './routes.js';
export { RunWatch } from './run-watch.js';
export { acceptanceBand, buildRunView, readMinEntropy, type RunView, type RunViewInput, type TestView, type TimelineRun } from './view-model.js';
