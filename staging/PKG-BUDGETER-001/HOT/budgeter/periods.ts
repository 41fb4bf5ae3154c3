import { CpError, show } from '#kernel/errors.js';

/** How often a limit resets: a UTC calendar day, an ISO week (Monday), a calendar month, or every N days from a date. */
export type Period = 'day' | 'week' | 'month' | { days: number; from?: string };

/** One period of a limit: [start, end) in epoch ms; `label` (its start's UTC date) names it in the store. */
export interface PeriodSpan {
  every: string;
  start: number;
  end: number;
  label: string;
}

const DAY_MS = 86_400_000;

/** The UTC midnight of a `YYYY-MM-DD` date, or null when it names no real day (2026-02-30). */
export function utcDate(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  return back.getUTCFullYear() === y && back.getUTCMonth() === mo - 1 && back.getUTCDate() === d ? ms : null;
}

/** Refuses a period whose `from` is no real date (the schema only checks its shape). */
export function checkPeriod(period: Period, pointer: string): void {
  if (typeof period === 'string' || period.from === undefined || utcDate(period.from) !== null) return;
  throw new CpError(
    'ERR_BUDGET_CONFIG_INVALID',
    `budget config is invalid at ${pointer}/from: ${show(period.from)} is no date`,
    {
      hint: 'give the first day of the first period as a real UTC date, YYYY-MM-DD',
      details: { pointer: `${pointer}/from`, value: period.from },
    },
  );
}

/** The period holding `at`: pure arithmetic on the clock, so a call path never scans history to find it. */
export function periodAt(period: Period, at: number): PeriodSpan {
  const d = new Date(at);
  const y = d.getUTCFullYear();
  const mo = d.getUTCMonth();
  let start: number;
  let end: number;
  let every: string;
  if (period === 'month') {
    start = Date.UTC(y, mo, 1);
    end = Date.UTC(y, mo + 1, 1);
    every = 'month';
  } else if (period === 'day' || period === 'week') {
    const midnight = Date.UTC(y, mo, d.getUTCDate());
    // getUTCDay: 0 is Sunday; an ISO week starts on Monday.
    const back = period === 'week' ? (d.getUTCDay() + 6) % 7 : 0;
    start = midnight - back * DAY_MS;
    end = start + (period === 'week' ? 7 : 1) * DAY_MS;
    every = period;
  } else {
    const length = period.days * DAY_MS;
    const origin = period.from === undefined ? 0 : (utcDate(period.from) ?? 0);
    start = origin + Math.floor((at - origin) / length) * length;
    end = start + length;
    every = `${period.days} days`;
  }
  return { every, start, end, label: new Date(start).toISOString().slice(0, 10) };
}

/** The period label a scope's totals key carries (the text after its fifth separator), or '' for a lifetime scope. */
export function periodLabelOf(scope: string): string {
  const parts = scope.split('\u001f');
  return parts.length > 4 ? (parts[4] as string) : '';
}

/** The period as reports show it (snake_case: it is status output). */
export function periodView(span: PeriodSpan): { every: string; start: string; end: string } {
  return { every: span.every, start: new Date(span.start).toISOString(), end: new Date(span.end).toISOString() };
}
