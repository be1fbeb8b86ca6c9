// The live quality page: loads the timeline, the latest run and the failing runs from the
// page's data endpoints, draws them with view.js, and follows new runs through server-sent
// events (/page/v1/events). The selected run and the view live in the URL
// (#run=ID&hours=H&from=MS&to=MS), so marks are plain links: clickable, focusable and
// activated with Enter, and a view, zoomed or not, can be shared.
import { badge, esc, renderFailing, renderRun, renderSummary, renderTimeline, utc } from './view.js';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

const state = {
  hours: 24,
  /** The span the timeline is zoomed into ({from, to} in ms, dragged with the brush), or null. */
  zoom: /** @type {{from: number, to: number} | null} */ (null),
  retentionHours: 24 * 90,
  /** The service's schedule ({intervalSeconds, drawTimeoutSeconds, nextRunAt}), or null when unknown. */
  schedule: /** @type {any} */ (null),
  /** Runs in the period (the timeline may draw fewer marks, each the worst of a span). */
  runCount: 0,
  /** When the oldest stored run completed (ms), or null. */
  firstRunAt: /** @type {number | null} */ (null),
  /** @type {any[]} */ runs: [],
  now: Date.now(),
  /** Explicitly selected run id, or null to follow the newest. */
  selectedId: /** @type {number | null} */ (null),
  latest: /** @type {any} */ (null),
  /** The newest run that tested bits, when the newest run is an error run. */
  latestTested: /** @type {any} */ (null),
  selected: /** @type {any} */ (null),
  /** When the page last had an answer or an event from the service (ms), and whether the event stream is open. */
  lastHeard: 0,
  live: false,
};

/** The narrowest zoom (the server's minimum too), and how far a drag goes before it is a brush, not a click. */
const MIN_ZOOM_MS = 60_000;
const BRUSH_START_PX = 5;

/** Past a run's interval and draw timeout, plus this, the newest verdict is stale. */
const STALE_MARGIN_MS = 120_000;

/** The JSON at `url`; null for 204 (e.g. no run stored yet). */
async function getJson(url) {
  const response = await fetch(url, { headers: { accept: 'application/json' } });
  state.lastHeard = Date.now();
  if (response.status === 204) return null;
  if (!response.ok) {
    let message = `${response.status}`;
    try {
      message = (await response.json()).message ?? message;
    } catch {}
    throw new Error(`${url}: ${message}`);
  }
  return response.json();
}

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const run = params.get('run');
  const hours = Number(params.get('hours'));
  state.selectedId = run && /^[0-9]+$/.test(run) ? Number(run) : null;
  if (Number.isInteger(hours) && hours > 0) state.hours = hours;
  // A mark's link names only its run: the zoom stays until reset, and setHash writes it back.
  const from = Number(params.get('from'));
  const to = Number(params.get('to'));
  if (Number.isInteger(from) && Number.isInteger(to) && to - from >= MIN_ZOOM_MS && from > 0) state.zoom = { from, to };
}

function announce(text) {
  $('live-status').textContent = text;
}

function showError(where, err) {
  $(where).innerHTML = `<p class="problem" role="alert">Could not load: ${esc(err.message)}</p>`;
}

function drawTimeline() {
  const box = $('timeline-chart');
  const width = Math.max(300, Math.floor(box.clientWidth));
  let to = Math.max(state.now, ...state.runs.map((r) => r.time));
  let from = to - state.hours * 3_600_000;
  // A service younger than the period: the axis starts at its first run, not hours before it.
  if (state.firstRunAt !== null && state.firstRunAt > from) from = state.firstRunAt - Math.max(60_000, (to - state.firstRunAt) * 0.03);
  let since = from > to - state.hours * 3_600_000 ? `since the first run, ${utc(state.firstRunAt)}` : `in the last ${state.hours} h`;
  if (state.zoom) {
    ({ from, to } = state.zoom);
    since = `from ${utc(from)} to ${utc(to)} (zoomed)`;
  }
  box.innerHTML = renderTimeline(state.runs, { from, to, width, selectedId: state.selected?.id ?? null });
  /** @type {HTMLButtonElement} */ ($('reset-zoom')).hidden = !state.zoom;
  const count = Math.max(state.runCount, state.runs.length);
  const grouped = count > state.runs.length ? `, drawn as ${state.runs.length} marks: the worst run of each span` : '';
  $('timeline-count').textContent = `${count} run${count === 1 ? '' : 's'} ${since}${grouped}`;
}

function drawRangeOptions() {
  const select = /** @type {HTMLSelectElement} */ ($('range'));
  const choices = [
    [1, '1 hour'],
    [6, '6 hours'],
    [24, '24 hours'],
    [72, '3 days'],
    [168, '7 days'],
    [720, '30 days'],
    [2160, '90 days'],
  ].filter(([h]) => h <= state.retentionHours);
  if (!choices.some(([h]) => h === state.retentionHours)) choices.push([state.retentionHours, `${Math.round(state.retentionHours / 24)} days (all kept)`]);
  if (!choices.some(([h]) => h === state.hours)) choices.push([state.hours, `${state.hours} hours`]);
  select.innerHTML = choices
    .sort((a, b) => a[0] - b[0])
    .map(([h, label]) => `<option value="${h}"${h === state.hours ? ' selected' : ''}>${label}</option>`)
    .join('');
}

async function loadTimeline() {
  // The chart's width: a long period comes grouped to what it can show (issue 27).
  const width = Math.max(300, Math.floor($('timeline-chart').clientWidth));
  const span = state.zoom ? `&from=${Math.round(state.zoom.from)}&to=${Math.round(state.zoom.to)}` : '';
  const data = await getJson(`/page/v1/timeline?hours=${state.hours}&width=${width}${span}`);
  state.runs = data.runs;
  state.runCount = data.runCount ?? data.runs.length;
  state.now = data.now;
  state.retentionHours = data.retentionHours;
  state.schedule = data.schedule ?? null;
  state.firstRunAt = data.firstRunAt ?? null;
  drawRangeOptions();
  drawTimeline();
}

/** "14:05 UTC (in about 9 minutes)" for a time in ms since the epoch. */
function dueText(at) {
  const minutes = Math.round((at - Date.now()) / 60_000);
  const clock = `${new Date(at).toISOString().slice(11, 16)} UTC`;
  return minutes >= 1 ? `${clock} (in about ${minutes} minute${minutes === 1 ? '' : 's'})` : `${clock} (now)`;
}

/** The next scheduled run after now (ms), from the schedule the timeline gave. */
function nextRunAt(now) {
  const s = state.schedule;
  if (!s?.nextRunAt) return null;
  let at = s.nextRunAt;
  while (at < now) at += s.intervalSeconds * 1000;
  return at;
}

/** When the newest run's verdict goes stale: a whole interval and draw timeout, and a margin, after it. */
function staleAfter() {
  const s = state.schedule;
  const completed = Date.parse(state.latest?.completed ?? '');
  if (!s || Number.isNaN(completed)) return null;
  return completed + (s.intervalSeconds + s.drawTimeoutSeconds) * 1000 + STALE_MARGIN_MS;
}

/** How fresh "Now" is: when the page last heard from the service, and when the next run is due. */
function contactLine(now) {
  const heard = state.lastHeard ? `last heard from the service ${utc(state.lastHeard)}` : 'not heard from the service yet';
  const next = nextRunAt(now);
  return `<p class="contact" data-live="${state.live}">${state.live ? 'Live' : 'Not connected'}: ${esc(heard)}.${next ? ` Next run due ${esc(utc(next))}.` : ''}</p>`;
}

function drawNow() {
  const now = Date.now();
  if (state.latest) {
    const staleAt = staleAfter();
    const stale = staleAt !== null && now > staleAt;
    let html = '';
    if (stale) {
      html +=
        `<p class="stale-note" role="alert">${badge('error', '!', 'Stale')} No run has completed since ${esc(utc(state.latest.completed))}; ` +
        `one was due by ${esc(utc(staleAt))}. The verdict below may no longer hold.</p>`;
    }
    html += `<div class="${stale ? 'stale' : 'fresh'}">${renderSummary(state.latest, { title: `Latest run ${state.latest.id}` })}`;
    // An error run tested nothing: the newest verdict that exists is the run before it.
    if (state.latest.status === 'error' && state.latestTested) {
      html += renderSummary(state.latestTested, { title: `Latest tested run ${state.latestTested.id}` });
    }
    html += '</div>';
    $('now-body').innerHTML = html + contactLine(now);
    $('now-body').dataset.stale = String(stale);
    return;
  }
  const next = state.schedule?.nextRunAt;
  $('now-body').innerHTML = next
    ? `<p>No run is stored yet. The first run is due at ${esc(dueText(next))}; its result appears here when it completes.</p>`
    : '<p>No run is stored yet: runs appear here as they complete.</p>';
}

function drawSelected() {
  const body = $('selected-body');
  const run = state.selected;
  if (!run) {
    body.innerHTML = '<p>No run selected.</p>';
    return;
  }
  body.innerHTML =
    renderRun(run, { title: `Run ${run.id}` }) +
    `<p class="downloads"><a href="/runs/${run.id}/report.html">This run as a self-contained HTML report</a> · ` +
    `<a href="/api/v1/runs/${run.id}">its full JSON report</a>` +
    (run.keptBits > 0 ? ` · <a href="/page/v1/runs/${run.id}/bits" download="qentropy-run-${run.id}.bin">its ${run.keptBits.toLocaleString('en-US')} tested bits</a>` : '') +
    `</p>`;
  const index = state.runs.findIndex((r) => r.id === run.id);
  /** @type {HTMLButtonElement} */ ($('prev-run')).disabled = index <= 0;
  /** @type {HTMLButtonElement} */ ($('next-run')).disabled = index < 0 || index >= state.runs.length - 1;
}

async function loadSelected() {
  const id = state.selectedId ?? state.latest?.id ?? null;
  if (id === null) {
    state.selected = null;
  } else if (state.selected?.id !== id) {
    try {
      state.selected = id === state.latest?.id ? state.latest : await getJson(`/page/v1/runs/${id}`);
    } catch (err) {
      showError('selected-body', err);
      return;
    }
  }
  drawSelected();
  drawTimeline();
}

async function loadFailing() {
  try {
    $('failing-body').innerHTML = renderFailing((await getJson('/page/v1/failing?num=20')).runs);
  } catch (err) {
    showError('failing-body', err);
  }
}

async function loadLatest() {
  state.latest = await getJson('/page/v1/runs/latest');
  await loadLatestTested();
  drawNow();
}

/** When the newest run is an error run: the newest tested run in the timeline, for "Now". */
async function loadLatestTested() {
  if (state.latest?.status !== 'error') {
    state.latestTested = null;
    return;
  }
  const tested = [...state.runs].reverse().find((r) => r.status !== 'error' && r.id < state.latest.id);
  if (!tested) return;
  if (state.latestTested?.id !== tested.id) state.latestTested = await getJson(`/page/v1/runs/${tested.id}`).catch(() => null);
}

/** The URL fragment for the current view with run `runId` selected (none: follow the newest). */
function hashText(runId) {
  const params = new URLSearchParams();
  if (runId !== null) params.set('run', String(runId));
  if (state.hours !== 24) params.set('hours', String(state.hours));
  if (state.zoom) {
    params.set('from', String(Math.round(state.zoom.from)));
    params.set('to', String(Math.round(state.zoom.to)));
  }
  return params.toString();
}

function setHash() {
  const text = hashText(state.selectedId);
  history.replaceState(null, '', text ? `#${text}` : location.pathname);
}

/** A new run arrived (server-sent event): add it, and follow it unless another run is pinned. */
async function onNewRun(run) {
  if (state.runs.some((r) => r.id === run.id)) return;
  // Zoomed into the past: the new run is announced and shown in "Now", not drawn off the span.
  if (state.zoom && run.time > state.zoom.to) {
    await loadLatest();
    announce(`Live: new run ${run.id} at ${new Date(run.time).toISOString().slice(11, 19)} UTC, after the zoomed span`);
    return;
  }
  state.runs.push(run);
  state.runCount += 1;
  state.runs.sort((a, b) => a.time - b.time || a.id - b.id);
  state.now = Math.max(state.now, run.time);
  const cutoff = state.now - state.hours * 3_600_000;
  state.runCount -= state.runs.filter((r) => r.time < cutoff).reduce((n, r) => n + (r.group ?? 1), 0);
  state.runs = state.runs.filter((r) => r.time >= cutoff);
  await loadLatest();
  announce(`Live: new run ${run.id} at ${new Date(run.time).toISOString().slice(11, 19)} UTC — ${run.status === 'error' ? 'not tested' : run.strict ? 'failed' : run.loose ? 'passed, one criterion failed' : 'passed'}`);
  if (run.loose) void loadFailing();
  await loadSelected();
}

function connect() {
  // `after`: runs stored since the page loaded are sent first (reconnects use Last-Event-ID).
  const known = Math.max(0, state.latest?.id ?? 0, ...state.runs.map((r) => r.id));
  const events = new EventSource(`/page/v1/events?after=${known}`);
  events.addEventListener('open', () => {
    state.live = true;
    state.lastHeard = Date.now();
    announce('Live: new runs appear here as they complete.');
    drawNow();
  });
  events.addEventListener('run', (e) => {
    state.lastHeard = Date.now();
    void onNewRun(JSON.parse(/** @type {MessageEvent} */ (e).data));
  });
  events.addEventListener('error', () => {
    state.live = false;
    announce('Live updates interrupted; reconnecting…');
    drawNow();
  });
}

/**
 * Arrow keys on the timeline: Left/Right to the previous/next run, Home/End to the first and
 * last; the focused mark becomes the one Tab stop. Enter selects it (the mark is a link).
 */
function onTimelineKey(e) {
  const marks = /** @type {HTMLElement[]} */ ([...$('timeline-chart').querySelectorAll('a.mark')]);
  const at = marks.indexOf(/** @type {HTMLElement} */ (document.activeElement));
  if (at < 0) return;
  const to = { ArrowLeft: at - 1, ArrowRight: at + 1, ArrowUp: at - 1, ArrowDown: at + 1, Home: 0, End: marks.length - 1 }[e.key];
  if (to === undefined) return;
  e.preventDefault();
  const next = marks[Math.max(0, Math.min(marks.length - 1, to))];
  for (const m of marks) m.setAttribute('tabindex', m === next ? '0' : '-1');
  next.focus();
}

function step(delta) {
  const index = state.runs.findIndex((r) => r.id === state.selected?.id);
  const next = state.runs[index + delta];
  if (next) location.hash = hashText(next.id);
}

/** Zoom into [from, to] (ms), or back out to the whole period with null. */
async function setZoom(span) {
  state.zoom = span;
  setHash();
  await loadTimeline().catch((err) => showError('timeline-chart', err));
  announce(span ? `Timeline zoomed to ${utc(span.from)} – ${utc(span.to)}; Escape or "Reset zoom" shows the whole period.` : 'Timeline shows the whole period.');
}

/**
 * The brush: a drag across the timeline zooms into the span dragged over. A press that
 * moves less than BRUSH_START_PX stays a click (it selects a run); after a drag, the click
 * the browser sends is swallowed so it selects nothing.
 */
function installBrush() {
  const box = $('timeline-chart');
  /** @type {{x: number, pointerId: number, rect: SVGRectElement | null} | null} */
  let drag = null;
  let swallowClick = false;
  const svg = () => /** @type {SVGSVGElement | null} */ (box.querySelector('svg.timeline'));
  const plotX = (e) => e.clientX - (svg()?.getBoundingClientRect().left ?? 0);
  /** The time (ms) at plot pixel `px`, from the axis the chart was drawn with. */
  const timeAt = (px) => {
    const d = /** @type {SVGSVGElement} */ (svg()).dataset;
    const [from, to, x0, x1] = [Number(d.from), Number(d.to), Number(d.x0), Number(d.x1)];
    return from + ((Math.min(Math.max(px, x0), x1) - x0) / (x1 - x0)) * (to - from);
  };
  box.addEventListener('dragstart', (e) => e.preventDefault()); // a mark is a link: no link dragging
  box.addEventListener('pointerdown', (e) => {
    if (e.button !== 0 || !svg()) return;
    drag = { x: plotX(e), pointerId: e.pointerId, rect: null };
  });
  box.addEventListener('pointermove', (e) => {
    if (!drag || e.pointerId !== drag.pointerId) return;
    const x = plotX(e);
    if (!drag.rect) {
      if (Math.abs(x - drag.x) < BRUSH_START_PX) return;
      box.setPointerCapture(e.pointerId);
      drag.rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
      drag.rect.setAttribute('class', 'brush');
      drag.rect.setAttribute('y', '2');
      drag.rect.setAttribute('height', String(Number(svg()?.getAttribute('height') ?? 200) - 4));
    }
    // The chart may have been redrawn (a new run) since the drag began: keep the rect in it.
    if (drag.rect.ownerSVGElement !== svg()) svg()?.append(drag.rect);
    drag.rect.setAttribute('x', String(Math.min(x, drag.x)));
    drag.rect.setAttribute('width', String(Math.abs(x - drag.x)));
  });
  const end = (e, apply) => {
    if (!drag || e.pointerId !== drag.pointerId) return;
    const { x, rect } = drag;
    drag = null;
    if (!rect) return;
    rect.remove();
    swallowClick = true;
    setTimeout(() => (swallowClick = false)); // no click follows a drag that ended off the chart
    if (!apply || !svg()) return;
    let [from, to] = [timeAt(Math.min(x, plotX(e))), timeAt(Math.max(x, plotX(e)))];
    if (to - from < MIN_ZOOM_MS) [from, to] = [(from + to) / 2 - MIN_ZOOM_MS / 2, (from + to) / 2 + MIN_ZOOM_MS / 2];
    void setZoom({ from: Math.round(from), to: Math.round(to) });
  };
  box.addEventListener('pointerup', (e) => end(e, true));
  box.addEventListener('pointercancel', (e) => end(e, false));
  box.addEventListener(
    'click',
    (e) => {
      if (!swallowClick) return;
      swallowClick = false;
      e.preventDefault();
      e.stopPropagation();
    },
    true,
  );
}

async function start() {
  readHash();
  $('range').addEventListener('change', async (e) => {
    state.hours = Number(/** @type {HTMLSelectElement} */ (e.target).value);
    state.zoom = null; // a new period shows all of it
    setHash();
    await loadTimeline().catch((err) => showError('timeline-chart', err));
  });
  $('timeline-chart').addEventListener('keydown', onTimelineKey);
  installBrush();
  $('reset-zoom').addEventListener('click', () => void setZoom(null));
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && state.zoom && !e.defaultPrevented) void setZoom(null);
  });
  $('prev-run').addEventListener('click', () => step(-1));
  $('next-run').addEventListener('click', () => step(1));
  $('follow-latest').addEventListener('click', () => {
    state.selectedId = null;
    setHash();
    void loadSelected();
  });
  window.addEventListener('hashchange', () => {
    const zoom = state.zoom;
    readHash();
    setHash(); // a mark's link names only its run: write the period and zoom back
    if (state.zoom?.from !== zoom?.from || state.zoom?.to !== zoom?.to) void loadTimeline().catch((err) => showError('timeline-chart', err));
    void loadSelected().then(() => $('selected').focus());
  });
  new ResizeObserver(() => drawTimeline()).observe($('timeline-chart'));
  await Promise.all([
    loadTimeline().catch((err) => showError('timeline-chart', err)),
    loadLatest().catch((err) => showError('now-body', err)),
    loadFailing(),
  ]);
  // "Now" needs the timeline too: the schedule (first run, staleness) and, after an error
  // run, the newest tested run.
  if (!$('now-body').querySelector('.problem')) {
    await loadLatestTested().catch(() => undefined);
    drawNow();
  }
  await loadSelected();
  connect();
  // Staleness and "next run due" move with the clock, not only with events.
  setInterval(() => {
    if (!$('now-body').querySelector('.problem')) drawNow();
  }, 15_000);
  document.body.dataset.ready = 'true';
}

void start();
