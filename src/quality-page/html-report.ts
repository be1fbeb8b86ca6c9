// One run as a single self-contained HTML file (`qentropy sts FILE --html`, `qentropy
// quality report RUN --html`, and the page's report links): the selected-run view drawn by
// the page's own view.js, the stylesheet inlined, the data inlined as JSON for machines, no
// script and nothing fetched, so it opens from an e-mail attachment with no network.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

import { loadView, readAssetText } from './assets.js';
import type { RunView } from './view-model.js';

/** The report's policy: nothing but its own inlined stylesheet (by hash); no script at all. */
export function reportCsp(): string {
  const cssHash = crypto.createHash('sha256').update(readAssetText('page.css')).digest('base64');
  return `default-src 'none'; style-src 'sha256-${cssHash}'; base-uri 'none'; form-action 'none'`;
}

/** The report's HTML text. */
export async function renderHtmlReport(run: RunView, options: { title?: string } = {}): Promise<string> {
  const view = await loadView();
  const css = readAssetText('page.css');
  const title = options.title ?? (run.id === null ? `NIST SP 800-22 report: ${run.source}` : `Quality run ${run.id}`);
  // "</" cannot end the data block early: JSON keeps it as the escape "<\/".
  const data = JSON.stringify(run).replace(/</g, '\\u003c');
  const csp = reportCsp();
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="qentropy">
<title>${view.esc(title)}</title>
<style>${css}</style>
</head>
<body class="report">
<header class="site">
<h1>${view.esc(title)}</h1>
<p class="lede">NIST Statistical Test Suite (SP 800-22): 15 tests, ${run.subTests.length} sub-tests, significance level ${run.alpha}. A run passes when it meets at least one of the two criteria: NIST's proportion of passing sequences, or uniformly spread P-values. Times are UTC.</p>
</header>
<main>
<section id="selected" aria-label="${view.esc(title)}">
${view.renderRun(run, { title: run.id === null ? 'Result' : `Run ${run.id}`, headingLevel: 'h2' })}
</section>
</main>
<footer class="site"><p>Written by qentropy on ${view.esc(view.utc(Date.now()))}. The data shown is inlined below as JSON (element #run-data).</p></footer>
<script type="application/json" id="run-data">${data}</script>
</body>
</html>
`;
}

/** Writes the report to `file` whole or not at all (a temporary file renamed into place), mode 0600. */
export async function writeHtmlReport(file: string, run: RunView, options: { title?: string } = {}): Promise<void> {
  const html = await renderHtmlReport(run, options);
  const tmp = path.join(path.dirname(path.resolve(file)), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    await fs.rm(tmp, { force: true });
    await fs.writeFile(tmp, html, { mode: 0o600, flag: 'wx' });
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}
