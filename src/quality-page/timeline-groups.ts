// Long periods on the page's timeline: 90 days of 10-minute runs are ~13,000 marks (~4 MB
// of JSON) for a chart a few hundred pixels wide. Beyond what the width can show, the
// period is cut into equal spans and each span is sent as its WORST run (strictly failing,
// then loosely failing, then error, then passing; the newest among equals), with how many
// runs it stands for. A failing run is never hidden by aggregation, and every mark is still
// a real run the page can select.
import type { TimelineRun } from './view-model.js';

/** A timeline run standing for `group` runs of its span (1 when not aggregated). */
export type GroupedRun = TimelineRun & { group: number };

/** Pixels per group: marks need about this much room to be told apart and clicked. */
const PX_PER_GROUP = 3;

function severity(run: TimelineRun): number {
  if (run.strict) return 3;
  if (run.loose) return 2;
  return run.status === 'error' ? 1 : 0;
}

/**
 * `runs` (oldest first, within [fromMs, toMs]) as at most width / 3 groups, or unchanged
 * (each a group of 1) when they fit.
 */
export function groupTimeline(runs: TimelineRun[], fromMs: number, toMs: number, widthPx: number): GroupedRun[] {
  const groups = Math.max(1, Math.floor(widthPx / PX_PER_GROUP));
  if (runs.length <= groups) return runs.map((run) => ({ ...run, group: 1 }));
  const span = Math.max(1, toMs - fromMs) / groups;
  const out: GroupedRun[] = [];
  let slot = -1;
  for (const run of runs) {
    const at = Math.min(groups - 1, Math.max(0, Math.floor((run.time - fromMs) / span)));
    const last = out[out.length - 1];
    if (at !== slot || !last) {
      out.push({ ...run, group: 1 });
      slot = at;
    } else {
      const count = last.group + 1;
      if (severity(run) >= severity(last)) out[out.length - 1] = { ...run, group: count };
      else last.group = count;
    }
  }
  return out;
}
