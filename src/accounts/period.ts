// Allotment periods: when an account's allotment resets (docs/accounts.md).
//   month   - monthly, at 00:00 UTC on the account's start day (the day of month it was
//             created, as the provider does). A start day the month lacks (29-31) falls on
//             that month's last day, and the next month returns to the start day: an
//             account started on Jan 31 resets Feb 28 (29), Mar 31, Apr 30, May 31, ...
//   day     - daily at 00:00 UTC.
//   hours:N - every N hours counted from the account's creation (its anchor).

export type Period = { kind: 'month' } | { kind: 'day' } | { kind: 'hours'; hours: number };

export interface PeriodWindow {
  /** Start of the period containing `now` (ms since the epoch, inclusive). */
  start: number;
  /** When the next period starts and the allotment resets (ms, exclusive). */
  end: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Longest hours:N period accepted: one year. */
export const MAX_PERIOD_HOURS = 8784;

/** Parses `month`, `day` or `hours:N` (1 <= N <= 8784); throws a one-line message otherwise. */
export function parsePeriod(text: string): Period {
  if (text === 'month') return { kind: 'month' };
  if (text === 'day') return { kind: 'day' };
  const m = /^hours:([0-9]+)$/.exec(text);
  if (m) {
    const hours = Number(m[1]);
    if (hours >= 1 && hours <= MAX_PERIOD_HOURS) return { kind: 'hours', hours };
    throw new Error(`period '${text}': hours must be 1..${MAX_PERIOD_HOURS}`);
  }
  throw new Error(`period '${text}': expected month, day or hours:N`);
}

export function formatPeriod(period: Period): string {
  return period.kind === 'hours' ? `hours:${period.hours}` : period.kind;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/** 00:00 UTC of `startDay` in (year, month), clamped to the month's last day. */
function monthBoundary(year: number, month: number, startDay: number): number {
  // Date.UTC normalises month overflow (month 12 -> January of year + 1).
  const first = new Date(Date.UTC(year, month, 1));
  const y = first.getUTCFullYear();
  const mo = first.getUTCMonth();
  return Date.UTC(y, mo, Math.min(startDay, daysInMonth(y, mo)));
}

/** The period of `period`, anchored at `anchor` (the account's creation), that contains `now`. */
export function periodWindow(period: Period, anchor: number, now: number): PeriodWindow {
  switch (period.kind) {
    case 'day': {
      const start = Math.floor(now / DAY_MS) * DAY_MS;
      return { start, end: start + DAY_MS };
    }
    case 'hours': {
      const length = period.hours * HOUR_MS;
      const start = anchor + Math.floor((now - anchor) / length) * length;
      return { start, end: start + length };
    }
    case 'month': {
      const startDay = new Date(anchor).getUTCDate();
      const d = new Date(now);
      const year = d.getUTCFullYear();
      const month = d.getUTCMonth();
      const thisMonth = monthBoundary(year, month, startDay);
      if (now >= thisMonth) return { start: thisMonth, end: monthBoundary(year, month + 1, startDay) };
      return { start: monthBoundary(year, month - 1, startDay), end: thisMonth };
    }
  }
}
