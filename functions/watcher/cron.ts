/**
 * Cron schedules (5 fields or @macros) in an IANA time zone. Times are stepped as instants and
 * read in the zone's local time, so DST is handled the way the wall clock sees it: a local time
 * skipped by a spring-forward never fires; one repeated in autumn fires once per instant.
 */
const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

export class CronError extends Error {
  override readonly name = 'CronError';
  readonly retry = false;
}

type Field = { values: Set<number>; any: boolean };

const parseField = (text: string, min: number, max: number, names?: string[], nameBase = 0): Field => {
  const values = new Set<number>();
  const value = (v: string) => {
    const i = names?.indexOf(v.toLowerCase()) ?? -1;
    const n = i >= 0 ? i + nameBase : Number(v);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new CronError(`"${v}" is out of range ${min}-${max}`);
    return n;
  };
  for (const part of text.split(',')) {
    const [range = '', stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new CronError(`bad step in "${part}"`);
    const [lo, hi] =
      range === '*'
        ? [min, max]
        : range.includes('-')
          ? range.split('-').map(value)
          : [value(range), stepText ? max : value(range)];
    if (lo === undefined || hi === undefined || lo > hi) throw new CronError(`bad range "${range}"`);
    for (let v = lo; v <= hi; v += step) values.add(v);
  }
  return { values, any: text === '*' };
};

export type Cron = { minute: Field; hour: Field; dom: Field; month: Field; dow: Field };

export const parseCron = (expr: string): Cron => {
  const text = MACROS[expr.trim()] ?? expr.trim();
  const f = text.split(/\s+/);
  if (f.length !== 5) throw new CronError(`"${expr}" is not a 5-field cron expression`);
  const dow = parseField(f[4] as string, 0, 7, DAYS);
  if (dow.values.has(7)) dow.values.add(0); // 7 is Sunday too
  return {
    minute: parseField(f[0] as string, 0, 59),
    hour: parseField(f[1] as string, 0, 23),
    dom: parseField(f[2] as string, 1, 31),
    month: parseField(f[3] as string, 1, 12, MONTHS, 1),
    dow,
  };
};

const formatters = new Map<string, Intl.DateTimeFormat>();
/** Local wall-clock parts of an instant in a time zone. */
export const localParts = (t: Date, timeZone: string) => {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      weekday: 'short',
    });
    formatters.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(t).map((x) => [x.type, x.value]));
  return {
    month: Number(p.month),
    day: Number(p.day),
    hour: Number(p.hour),
    minute: Number(p.minute),
    dow: DAYS.indexOf(String(p.weekday).toLowerCase().slice(0, 3)),
  };
};

const MINUTE = 60_000;

/** Days in each month (1-12) in the longest year. */
const MONTH_DAYS = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * True when no date ever matches: day-of-week is `*` (so day-of-month alone decides) and no
 * month named has a day named (30 February, 31 April). With both day fields restricted either
 * matches (Vixie cron), and a weekday occurs in every month, so such a schedule does fire.
 */
export const neverFires = (cron: Cron) =>
  cron.dow.any &&
  ![...cron.month.values].some((m) => [...cron.dom.values].some((d) => d <= (MONTH_DAYS[m] ?? 0)));

/**
 * How many local days nextFire looks at before it gives up. Any date a cron expression can match
 * (a day of month in a month, or a weekday in a month) recurs within 8 years: the longest gap is
 * 29 February across a century that is not a leap year (2096 to 2104, 2,922 days). A weekday
 * combined with a date needs no longer, as either matches. So a schedule that has not fired within
 * this many days never will (only a time zone that skips its wall-clock time every time could also
 * end here).
 */
export const SEARCH_DAYS = 8 * 366 + 2;

/**
 * The first fire time strictly after `after`, or 'never'. Throws CronError for a zone Intl does
 * not know. `count`, when given, is told each instant looked at (for tests: the work is bounded).
 */
export const nextFire = (cron: Cron, timeZone: string, after: Date, count?: () => void): Date | 'never' => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    throw new CronError(`unknown time zone "${timeZone}"`);
  }
  if (neverFires(cron)) return 'never';
  let t = Math.floor(after.getTime() / MINUTE) * MINUTE + MINUTE;
  // A day that does not match takes one step; one that does, at most 24 hour steps and 60 minute
  // steps before it fires.
  for (let days = 0, day = -1; ; ) {
    count?.();
    let p = localParts(new Date(t), timeZone);
    if (p.day !== day) {
      // A jump to "the next midnight" across a spring-forward lands past it (01:00): go back to
      // the day's first minute, unless that is in the day before (midnight itself was skipped).
      if (day !== -1 && (p.hour > 0 || p.minute > 0)) {
        const back = t - (p.hour * 60 + p.minute) * MINUTE;
        const q = localParts(new Date(back), timeZone);
        if (q.day === p.day) [t, p] = [back, q];
      }
      day = p.day;
      if (++days > SEARCH_DAYS) return 'never';
    }
    const domOk = cron.dom.values.has(p.day);
    const dowOk = cron.dow.values.has(p.dow);
    // Vixie cron: with both day fields restricted, either may match.
    const dayOk = cron.dom.any ? dowOk : cron.dow.any ? domOk : domOk || dowOk;
    if (!cron.month.values.has(p.month) || !dayOk) {
      t += (24 * 60 - p.hour * 60 - p.minute) * MINUTE; // to the next local midnight
    } else if (!cron.hour.values.has(p.hour)) {
      t += (60 - p.minute) * MINUTE;
    } else if (!cron.minute.values.has(p.minute)) {
      t += MINUTE;
    } else {
      return new Date(t);
    }
  }
};
