// The quality page's views as HTML and SVG text: the same functions draw the live page in
// the browser (app.js) and the self-contained HTML report in Node (html-report.ts), so
// the file an auditor gets shows exactly what the page shows. Pure functions of their
// arguments: no DOM, no globals, no inline style (the page's CSP forbids it); colours come
// from classes in page.css, and every colour is paired with a shape, an icon or a word.
// Types: view.d.ts beside this file.

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for HTML content and attribute values. */
export function esc(value) {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const fixed = (x, digits) => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(digits));
const int = (n) => Number(n).toLocaleString('en-US');

/** "2026-11-25 07:40:12 UTC" from Unix ms or an ISO string. */
export function utc(time) {
  if (time === null || time === undefined) return 'unknown time';
  const d = new Date(time);
  return Number.isNaN(d.getTime()) ? String(time) : `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** Overall verdict of a run: class (colour), icon and words, so colour is never alone. */
export function verdictOf(run) {
  if (run.status === 'error') return { cls: 'error', icon: '!', word: 'Not tested', detail: run.error ?? 'the run could not test any bits' };
  if (run.strict) return { cls: 'fail', icon: '✗', word: 'Failed', detail: 'both criteria failed' };
  if (run.loose) return { cls: 'warn', icon: '▲', word: 'Passed, one criterion failed', detail: 'tests_passed is true, but one criterion failed' };
  return { cls: 'pass', icon: '✓', word: 'Passed', detail: 'both criteria passed' };
}

/** A verdict badge: icon and words inside a coloured box. */
export function badge(cls, icon, word) {
  return `<span class="badge ${cls}"><span class="icon" aria-hidden="true">${esc(icon)}</span> ${esc(word)}</span>`;
}

const passFail = (ok, yes = 'passed', no = 'failed') => (ok ? badge('pass', '✓', yes) : badge('fail', '✗', no));

/** The view-model run (RunView) as the summary flags verdictOf reads. */
function runFlags(run) {
  const c = run.criteria;
  return {
    status: run.status,
    error: run.error,
    strict: c ? c.strictly_failing : false,
    loose: c ? c.loosely_failing : false,
  };
}

/** Verdicts, time, coverage and source of a run (the "Now" panel and the top of a run). */
export function renderSummary(run, options = {}) {
  const v = verdictOf(runFlags(run));
  const title = options.title ?? (run.id === null ? 'Tested file' : `Run ${run.id}`);
  const bits = run.streams * run.bitsPerStream;
  const rows = [
    ['Completed', `<time datetime="${esc(run.completed ?? '')}">${esc(utc(run.completed))}</time>`],
    ['Source', esc(run.source)],
    ['Covered', `${int(bits)} bits: ${int(run.streams)} sequence${run.streams === 1 ? '' : 's'} × ${int(run.bitsPerStream)} bits`],
  ];
  const c = run.criteria;
  if (c) {
    const k = c.nist_passes + c.nist_fails;
    rows.push([
      'NIST proportion criterion',
      `${passFail(c.nist_all_passed)} ${int(c.nist_passes)} of ${int(k)} sub-test results passed: success rate ${fixed(c.nist_success_rate, 4)}, minimum ${fixed(c.nist_min_pass_proportion, 4)}`,
    ]);
    rows.push([
      'Uniformity criterion',
      `${passFail(c.uniformity_all_passed)} ${c.uniformity_passes} of ${c.uniformity_passes + c.uniformity_fails} tests uniform` +
        (c.uniformity_excluded ? `, ${c.uniformity_excluded} left out (too few sequences)` : '') +
        `: success rate ${fixed(c.uniformity_success_rate, 4)}`,
    ]);
  }
  if (run.repetition) {
    const rep = run.repetition;
    const text = rep.flagged
      ? [
          rep.identical.length ? `${rep.identical.length} sequence(s) repeat an earlier one` : '',
          rep.periodBits ? `the bits repeat with a period of ${int(rep.periodBits)} bits` : '',
        ]
          .filter(Boolean)
          .join('; ')
      : 'no identical sequences; the stream does not repeat';
    rows.push(['Repetition detector', `${rep.flagged ? badge('fail', '✗', 'flagged') : badge('pass', '✓', 'clear')} ${esc(text)}`]);
  }
  if (run.minEntropy) {
    const m = run.minEntropy;
    const parts = [];
    if (m.assessed !== null) parts.push(`<strong>${fixed(m.assessed, 6)}</strong> bits per byte assessed`);
    if (m.original !== null) parts.push(`H_original ${fixed(m.original, 6)}`);
    if (m.bitstring !== null) parts.push(`H_bitstring ${fixed(m.bitstring, 6)} per bit`);
    rows.push(['Min-entropy (SP 800-90B)', parts.join(', ')]);
  }
  if (run.status === 'error') rows.push(['Error', esc(run.error ?? 'unknown')]);
  const headingTag = options.headingLevel ?? 'h3';
  return (
    `<div class="summary ${v.cls}" data-verdict="${v.cls}">` +
    `<${headingTag} class="verdict">${esc(title)}: ${badge(v.cls, v.icon, v.word)}</${headingTag}>` +
    `<p class="verdict-detail">${esc(v.detail)}</p>` +
    `<dl class="facts">${rows.map(([k, val]) => `<div><dt>${esc(k)}</dt><dd>${val}</dd></div>`).join('')}</dl>` +
    `</div>`
  );
}

/** A common proportion axis for all tests of a run, so their bands line up. */
function proportionDomain(run) {
  let lo = 1 - run.alpha - 0.01;
  for (const t of run.tests) {
    if (t.band) lo = Math.min(lo, t.band[0]);
    for (const p of t.proportions) if (p !== null) lo = Math.min(lo, p);
  }
  return [Math.max(0, Math.floor((lo - 0.005) * 100) / 100), 1];
}

const W = 240;

/** Each sub-test's proportion as a dot on [lo, 1], over NIST's band; dots outside are crosses. */
function proportionChart(test, domain, alpha) {
  const [lo, hi] = domain;
  const x = (p) => 6 + ((Math.min(Math.max(p, lo), hi) - lo) / (hi - lo)) * (W - 12);
  const parts = [`<line class="axis" x1="6" x2="${W - 6}" y1="30" y2="30"/>`];
  if (test.band) {
    const b0 = x(test.band[0]);
    const b1 = x(Math.min(test.band[1], 1));
    parts.push(`<rect class="band" x="${b0.toFixed(1)}" y="2" width="${(b1 - b0).toFixed(1)}" height="28"><title>acceptance band ${fixed(test.band[0], 4)} to ${fixed(test.band[1], 4)}</title></rect>`);
  }
  parts.push(`<line class="expected" x1="${x(1 - alpha).toFixed(1)}" x2="${x(1 - alpha).toFixed(1)}" y1="2" y2="30"/>`);
  test.proportions.forEach((p, i) => {
    if (p === null) return;
    const cx = x(p).toFixed(1);
    const cy = 8 + (i % 5) * 4.5;
    parts.push(
      !test.outside[i]
        ? `<circle class="dot" cx="${cx}" cy="${cy}" r="2.5"/>`
        : `<path class="dot out" d="M${cx} ${cy}m-4 -4l8 8m0 -8l-8 8"/>`,
    );
  });
  parts.push(`<text class="tick" x="6" y="42">${lo.toFixed(2)}</text><text class="tick end" x="${W - 6}" y="42">1.00</text>`);
  const label = test.lowest
    ? `Proportion of passing sequences for ${test.name}: lowest ${test.lowest.passed} of ${test.lowest.sampleSize}` +
      (test.band ? `, band ${fixed(test.band[0], 4)} to ${fixed(test.band[1], 4)}` : '')
    : `No sequence applicable to ${test.name}`;
  return `<svg class="proportion" viewBox="0 0 ${W} 46" role="img" aria-label="${esc(label)}">${parts.join('')}</svg>`;
}

/**
 * The histogram a card shows: the test's, summed over its sub-tests, unless uniformity
 * failed on a test with several sub-tests. Then the failing sub-test's own bins, since the
 * sum of 148 templates can look flat while one template is far from uniform, and a flat
 * histogram labelled "not uniform" contradicts itself.
 */
function shownHistogram(run, test) {
  if (test.uniformity !== 'failed' || test.subTests <= 1) return { counts: test.histogram, sub: null };
  let worst = null;
  for (const st of run.subTests) {
    if (st.test !== test.test || st.uniformityP === null) continue;
    if (!worst || st.uniformityP < worst.uniformityP) worst = st;
  }
  return worst ? { counts: worst.histogram, sub: worst } : { counts: test.histogram, sub: null };
}

/**
 * C1..C10 bars, heights proportional to counts, over a count axis (0 and the tallest bar);
 * a dashed line at the count a uniform spread expects.
 */
function histogramChart(test, shown) {
  const counts = shown.counts;
  const max = Math.max(1, ...counts);
  const total = counts.reduce((a, b) => a + b, 0);
  const top = 8;
  const base = 76;
  const left = 30;
  const barW = (W - left - 6) / 10;
  const bars = counts.map((count, i) => {
    const h = ((base - top) * count) / max;
    return (
      `<rect class="bar" data-count="${count}" x="${(left + i * barW + 1).toFixed(1)}" y="${(base - h).toFixed(2)}" width="${(barW - 2).toFixed(1)}" height="${h.toFixed(2)}">` +
      `<title>C${i + 1}, P in [${(i / 10).toFixed(1)}, ${((i + 1) / 10).toFixed(1)}${i === 9 ? ']' : ')'}: ${count}</title></rect>`
    );
  });
  const expectedY = base - ((base - top) * (total / 10)) / max;
  const of = shown.sub ? `${test.name} sub-test ${shown.sub.label ?? ''}`.trim() : test.name;
  const label = `P-value histogram of ${of}, C1 to C10: ${counts.join(', ')}`;
  return (
    `<svg class="histogram" viewBox="0 0 ${W} 90" role="img" aria-label="${esc(label)}"${shown.sub ? ` data-sub-test="${esc(shown.sub.label ?? '')}"` : ''}>` +
    `<line class="axis" x1="${left}" x2="${W - 6}" y1="${base}" y2="${base}"/><line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${base}"/>` +
    `<text class="tick end count-max" x="${left - 3}" y="${top + 7}">${int(max)}</text><text class="tick end" x="${left - 3}" y="${base}">0</text>` +
    bars.join('') +
    (total > 0 ? `<line class="expected" x1="${left}" x2="${W - 6}" y1="${expectedY.toFixed(2)}" y2="${expectedY.toFixed(2)}"/>` : '') +
    `<text class="tick" x="${left}" y="88">P = 0</text><text class="tick end" x="${W - 6}" y="88">1</text></svg>`
  );
}

function uniformityText(test, shown) {
  if (shown.sub) {
    const label = shown.sub.label ? ` ${esc(shown.sub.label)}` : '';
    return (
      `${badge('fail', '✗', 'not uniform')} sub-test${label} of ${test.subTests}: P-value of uniformity ${fixed(shown.sub.uniformityP, 6)}; ` +
      `the histogram above is that sub-test's (counts of sequences per bin)`
    );
  }
  const where = test.subTests > 1 ? ` (lowest of ${test.subTests} sub-tests; histogram: counts summed over them)` : '';
  const p = test.uniformityP === null ? 'not computed' : fixed(test.uniformityP, 6);
  const verdict =
    test.uniformity === 'passed'
      ? badge('pass', '✓', 'uniform')
      : test.uniformity === 'failed'
        ? badge('fail', '✗', 'not uniform')
        : badge('neutral', '–', 'not judged');
  return `${verdict} P-value of uniformity ${p}${where}`;
}

function proportionText(test) {
  if (!test.lowest) return `${badge('neutral', '–', 'not applicable')} no sequence applied`;
  const { passed, sampleSize, label } = test.lowest;
  const out = test.outside.some(Boolean);
  const which = test.subTests > 1 ? ` (lowest of ${test.subTests} sub-tests${label ? `: ${esc(label)}` : ''})` : '';
  return `${out ? badge('fail', '✗', 'outside band') : badge('pass', '✓', 'in band')} ${passed}/${sampleSize} passed${which}`;
}

/** One card per test: proportion against the band, P-value histogram, and their verdicts. */
export function renderTests(run, cardHeading = 'h5') {
  if (run.tests.length === 0) return '';
  const domain = proportionDomain(run);
  const cards = run.tests.map((t) => {
    const flagged = t.flagged > 0;
    const shown = shownHistogram(run, t);
    return (
      `<article class="test-card${flagged ? ' flagged' : ''}${t.uniformity === 'failed' ? ' not-uniform' : ''}" data-test="${esc(t.test)}" data-flagged="${t.flagged}">` +
      `<${cardHeading}>${esc(t.name)}${t.subTests > 1 ? ` <span class="count">${t.subTests} sub-tests</span>` : ''}` +
      (flagged ? ` ${badge('fail', '✗', `${t.flagged} flagged`)}` : '') +
      `</${cardHeading}>` +
      proportionChart(t, domain, run.alpha) +
      `<p class="caption">${proportionText(t)}</p>` +
      histogramChart(t, shown) +
      `<p class="caption">${uniformityText(t, shown)}</p>` +
      `</article>`
    );
  });
  return `<div class="tests">${cards.join('')}</div>`;
}

function subTestRow(st) {
  const flaggedP = st.uniformityAssessed && !st.uniformityOk;
  const flaggedK = st.sampleSize > 0 && !st.proportionOk;
  const p = st.uniformityP === null ? '—' : `${fixed(st.uniformityP, 6)}${flaggedP ? ' ✗' : ''}`;
  const prop = st.sampleSize === 0 ? '—' : `${st.passed}/${st.sampleSize}${flaggedK ? ' ✗' : ''}`;
  return (
    `<tr class="${flaggedP || flaggedK ? 'flagged' : ''}">` +
    `<th scope="row">${esc(st.test)}${st.label ? ` <span class="label">${esc(st.label)}</span>` : ''}</th>` +
    `<td class="num${flaggedP ? ' bad' : ''}">${p}</td><td class="num${flaggedK ? ' bad' : ''}">${prop}</td>` +
    st.histogram.map((c) => `<td class="num">${c}</td>`).join('') +
    `</tr>`
  );
}

function subTestTable(rows, caption) {
  const head = Array.from({ length: 10 }, (_, i) => `<th scope="col" class="num">C${i + 1}</th>`).join('');
  return (
    `<div class="table-wrap"><table class="subtests"><caption>${esc(caption)}</caption>` +
    // The verdict columns first: on a phone the ten bins scroll, the verdicts stay in view.
    `<thead><tr><th scope="col">Sub-test</th><th scope="col" class="num">P-value of uniformity</th><th scope="col" class="num">Proportion</th>${head}</tr></thead>` +
    `<tbody>${rows.map(subTestRow).join('')}</tbody></table></div>`
  );
}

const isFlagged = (st) => (st.sampleSize > 0 && !st.proportionOk) || (st.uniformityAssessed && !st.uniformityOk);

/** The flagged sub-tests, or a sentence saying there are none. */
export function renderFlagged(run) {
  const flagged = run.subTests.filter(isFlagged);
  if (run.status === 'error') return '';
  if (flagged.length === 0) return `<p class="flagged-none">${badge('pass', '✓', 'No flagged sub-test')} every sub-test is inside its band and, where judged, uniform.</p>`;
  return `<div class="flagged-list">${subTestTable(flagged, `${flagged.length} flagged sub-test${flagged.length === 1 ? '' : 's'} (✗ marks the failing column)`)}</div>`;
}

/** A run in full: summary, the 15 test cards, the flagged sub-tests and NIST's whole table. */
export function renderRun(run, options = {}) {
  if (run.status === 'error') return renderSummary(run, options);
  const level = Number((options.headingLevel ?? 'h3').slice(1));
  const part = `h${level + 1}`;
  return (
    renderSummary(run, options) +
    `<${part} class="part">The 15 tests</${part}>` +
    `<p class="legend">Top of each card: the proportion of sequences that passed each sub-test (a dot each; ✗ outside the band) over NIST's acceptance band (shaded), with the expected proportion ${fixed(1 - run.alpha, 2)} as a line. Below: how the test's P-values spread over ten bins from 0 to 1 (counts of P-values, scale at the left; for a test of several sub-tests found not uniform, the bins of its least uniform sub-test); the dashed line is what a uniform spread gives. A card with a thick border has flagged sub-tests, listed after the cards.</p>` +
    renderTests(run, `h${level + 2}`) +
    `<${part} class="part">Flagged sub-tests</${part}>${renderFlagged(run)}` +
    `<details class="all-subtests"><summary>All ${run.subTests.length} sub-tests as NIST's table</summary>${subTestTable(run.subTests, 'C1..C10: P-values per tenth of [0, 1]')}</details>`
  );
}

/** A time step giving at most `most` ticks over `spanMs`. */
function tickStep(spanMs, most) {
  const h = 3_600_000;
  const min = 60_000;
  for (const step of [5 * min, 10 * min, 15 * min, 30 * min, h, 2 * h, 3 * h, 6 * h, 12 * h, 24 * h, 2 * 24 * h, 7 * 24 * h, 14 * 24 * h]) {
    if (spanMs / step <= most) return step;
  }
  return 30 * 24 * h;
}

/**
 * The timeline as SVG `width` pixels wide: one link per run (two stacked marks, NIST and
 * uniformity: short = passed, tall = failed, hollow = not tested), failing runs on a
 * shaded column, and the two success rates as lines.
 */
export function renderTimeline(runs, options) {
  const { from, to, width, selectedId } = options;
  // Taller on wide screens, so the rate lines keep a readable slope on a 4K display.
  const H = Math.round(Math.min(420, Math.max(210, width * 0.11)));
  const left = 52;
  const right = Math.max(left + 50, width - 10);
  const x = (t) => left + ((t - from) / Math.max(1, to - from)) * (right - left);
  // The rates that matter sit just under 1 (NIST's minimum is about 0.987): the axis shows
  // 0.90 to 1, and a rate below that is drawn on the bottom edge, its value in the tooltip.
  const yMin = 0.9;
  const lineTop = 62;
  const lineBottom = H - 32;
  const y = (v) => lineBottom - ((v - yMin) / (1 - yMin)) * (lineBottom - lineTop);
  const markW = Math.max(2, Math.min(8, ((right - left) / Math.max(1, runs.length)) * 0.7));
  const out = [];
  // Grid, axes and labels.
  for (const v of [yMin, 0.95, 1]) {
    out.push(`<line class="grid" x1="${left}" x2="${right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/>`);
    out.push(`<text class="tick end" x="${left - 4}" y="${(y(v) + 4).toFixed(1)}">${v === yMin ? '≤ ' : ''}${v.toFixed(2)}</text>`);
  }
  const minima = runs.map((r) => r.nistMinimum).filter((v) => v !== null && v !== undefined);
  if (minima.length) {
    const m = minima[minima.length - 1];
    out.push(`<line class="minimum" x1="${left}" x2="${right}" y1="${y(m).toFixed(1)}" y2="${y(m).toFixed(1)}"/>`);
    out.push(`<text class="tick" x="${left + 4}" y="${(y(m) + 12).toFixed(1)}">NIST minimum ${m.toFixed(4)}</text>`);
  }
  out.push(`<text class="tick end" x="${left - 4}" y="19">NIST</text><text class="tick end" x="${left - 4}" y="37">Unif.</text>`);
  const step = tickStep(to - from, Math.max(2, Math.min(12, Math.floor((right - left) / 64))));
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) {
    const d = new Date(t);
    const label = step < 86_400_000 ? d.toISOString().slice(11, 16) : d.toISOString().slice(5, 10);
    out.push(`<line class="grid" x1="${x(t).toFixed(1)}" x2="${x(t).toFixed(1)}" y1="${lineTop}" y2="${lineBottom + 4}"/>`);
    if (x(t) < right - 18) out.push(`<text class="tick mid" x="${x(t).toFixed(1)}" y="${lineBottom + 18}">${label}</text>`);
  }
  out.push(`<text class="tick" x="${right}" y="${H - 2}" text-anchor="end">UTC</text>`);
  // Failing runs stand out: a shaded column through the whole chart.
  for (const r of runs) {
    if (!r.loose) continue;
    out.push(`<rect class="fail-col${r.strict ? ' strict' : ''}" x="${(x(r.time) - markW / 2 - 1).toFixed(1)}" y="4" width="${(markW + 2).toFixed(1)}" height="${lineBottom - 4}"/>`);
  }
  // Success-rate lines, broken where a run has no rate.
  for (const [key, cls] of [['nistRate', 'line-nist'], ['uniformityRate', 'line-uni']]) {
    let d = '';
    let pen = false;
    for (const r of runs) {
      const v = r[key];
      if (v === null) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${x(r.time).toFixed(1)} ${y(Math.max(v, yMin)).toFixed(1)}`;
      pen = true;
    }
    if (d) out.push(`<path class="${cls}" d="${d}"/>`);
    if (runs.length <= 400) {
      for (const r of runs) {
        const v = r[key];
        if (v === null) continue;
        const cx = x(r.time).toFixed(1);
        const cy = y(Math.max(v, yMin)).toFixed(1);
        out.push(key === 'nistRate' ? `<circle class="pt-nist" cx="${cx}" cy="${cy}" r="2.2"/>` : `<rect class="pt-uni" x="${(+cx - 2).toFixed(1)}" y="${(+cy - 2).toFixed(1)}" width="4" height="4"/>`);
      }
    }
  }
  // One mark per run, one Tab stop for them all (a roving tabindex, as WAI-ARIA's listbox):
  // the selected run's mark, else the newest; arrow keys move between marks (app.js).
  const focusId = runs.some((r) => r.id === selectedId) ? selectedId : runs[runs.length - 1]?.id;
  // Hit areas at least 6 px wide, but never over a neighbour's half of the gap: a click
  // selects the run nearest the pointer even when runs are 2 px apart (a phone's day).
  const half = Math.max(markW, 6) / 2;
  const xs = runs.map((r) => x(r.time));
  const hitOf = (i) => {
    const lo = i > 0 ? Math.max(xs[i] - half, (xs[i - 1] + xs[i]) / 2) : xs[i] - half;
    const hi = i < xs.length - 1 ? Math.min(xs[i] + half, (xs[i] + xs[i + 1]) / 2) : xs[i] + half;
    return [lo, Math.max(0, hi - lo)];
  };
  for (const [i, r] of runs.entries()) {
    const v = verdictOf(r);
    const mx = (x(r.time) - markW / 2).toFixed(1);
    const label = `Run ${r.id}, ${utc(r.time)}: ${v.word}` + (r.status === 'error' ? '' : `; NIST ${r.nist ? 'passed' : 'failed'} (${fixed(r.nistRate, 4)}), uniformity ${r.uniformity ? 'passed' : 'failed'} (${fixed(r.uniformityRate, 4)})`) + (r.repetition ? '; repetition flagged' : '') + (r.group > 1 ? `; the worst of ${int(r.group)} runs in this span` : '');
    let marks;
    if (r.status === 'error') {
      marks = `<rect class="crit error" x="${mx}" y="10" width="${markW.toFixed(1)}" height="30"/>`;
    } else {
      const crit = (ok, top) =>
        ok
          ? `<rect class="crit ok" x="${mx}" y="${top + 4}" width="${markW.toFixed(1)}" height="6"/>`
          : `<rect class="crit bad" x="${mx}" y="${top}" width="${markW.toFixed(1)}" height="14"/>`;
      marks = crit(r.nist, 10) + crit(r.uniformity, 28);
    }
    const selected = r.id === selectedId;
    out.push(
      `<a class="mark ${v.cls}${selected ? ' selected' : ''}" href="#run=${r.id}" data-run-id="${r.id}" data-verdict="${v.cls}" tabindex="${r.id === focusId ? 0 : -1}"${selected ? ' aria-current="true"' : ''} aria-label="${esc(label)}"><title>${esc(label)}</title>` +
        `<rect class="hit" x="${hitOf(i)[0].toFixed(2)}" y="4" width="${hitOf(i)[1].toFixed(2)}" height="40"/>${marks}</a>`,
    );
  }
  const sel = runs.find((r) => r.id === selectedId);
  if (sel) out.push(`<line class="selected-line" x1="${x(sel.time).toFixed(1)}" x2="${x(sel.time).toFixed(1)}" y1="2" y2="${lineBottom}"/>`);
  // data-*: the time axis (ms at the plot's left and right pixel), for the page's zoom brush.
  return `<svg class="timeline" width="${width}" height="${H}" viewBox="0 0 ${width} ${H}" data-from="${from}" data-to="${to}" data-x0="${left}" data-x1="${right}" role="group" aria-label="Runs from ${esc(utc(from))} to ${esc(utc(to))}: ${runs.length} runs">${out.join('')}</svg>`;
}

/** The failing runs: when, which criterion, and links to their report and kept bits. */
export function renderFailing(runs) {
  if (runs.length === 0) return `<p>${badge('pass', '✓', 'None')} no stored run failed a criterion.</p>`;
  const rows = runs.map((r) => {
    const v = verdictOf(r);
    const which = [r.nist ? '' : 'NIST proportion', r.uniformity ? '' : 'uniformity'].filter(Boolean).join(' and ');
    const bits = r.keptBits > 0 ? `<a href="/page/v1/runs/${r.id}/bits" download="qentropy-run-${r.id}.bin">${int(r.keptBits)} bits</a>` : 'not kept';
    return (
      `<tr data-run-id="${r.id}"><td><a href="#run=${r.id}">Run ${r.id}</a></td><td><time datetime="${new Date(r.time).toISOString()}">${esc(utc(r.time))}</time></td>` +
      `<td>${badge(v.cls, v.icon, v.word)}</td><td>${esc(which || '—')}${r.repetition ? '; repetition flagged' : ''}</td>` +
      `<td><a href="/runs/${r.id}/report.html">HTML report</a></td><td>${bits}</td></tr>`
    );
  });
  return (
    `<div class="table-wrap"><table class="failing"><caption>Newest first</caption><thead><tr><th scope="col">Run</th><th scope="col">Completed</th><th scope="col">Verdict</th><th scope="col">Failed criterion</th><th scope="col">Report</th><th scope="col">Tested bits</th></tr></thead>` +
    `<tbody>${rows.join('')}</tbody></table></div>`
  );
}
