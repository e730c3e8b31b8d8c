import { describe, expect, it } from 'vitest';
import { NEVER_FIRING_CRON } from '../../shared/api/schedule.ts';
import { type Cron, CronError, neverFires, nextFire, parseCron, SEARCH_DAYS } from './cron.ts';

/** The next fire time as ISO text or 'never', and how many instants the search looked at. */
const search = (expr: string | Cron, tz: string, after: string) => {
  let steps = 0;
  const t = nextFire(typeof expr === 'string' ? parseCron(expr) : expr, tz, new Date(after), () => steps++);
  return { at: t === 'never' ? t : t.toISOString(), steps };
};
const next = (expr: string, tz: string, after: string) => search(expr, tz, after).at;

describe('cron', () => {
  it('fires at the next matching minute in UTC', () => {
    expect(next('0 3 * * *', 'UTC', '2026-11-22T02:59:30Z')).toBe('2026-11-22T03:00:00.000Z');
    expect(next('0 3 * * *', 'UTC', '2026-11-22T03:00:00Z')).toBe('2026-11-23T03:00:00.000Z');
    expect(next('*/15 * * * *', 'UTC', '2026-11-22T10:07:00Z')).toBe('2026-11-22T10:15:00.000Z');
    expect(next('@hourly', 'UTC', '2026-11-22T10:07:00Z')).toBe('2026-11-22T11:00:00.000Z');
  });

  it('reads the schedule in the time zone', () => {
    // 03:00 in Berlin is 02:00 UTC in winter.
    expect(next('0 3 * * *', 'Europe/Berlin', '2026-11-22T00:00:00Z')).toBe('2026-11-22T02:00:00.000Z');
    // and 01:00 UTC in summer.
    expect(next('0 3 * * *', 'Europe/Berlin', '2026-07-01T00:00:00Z')).toBe('2026-07-01T01:00:00.000Z');
  });

  it('skips a local time that DST removes', () => {
    // Europe/Berlin springs from 02:00 to 03:00 on 2026-03-29: 02:30 does not exist that day.
    expect(next('30 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z')).toBe('2026-03-30T00:30:00.000Z');
  });

  it('fires a local time that DST repeats once per instant', () => {
    // Europe/Berlin falls back from 03:00 to 02:00 on 2026-10-25: 02:30 happens at 00:30 and 01:30 UTC.
    expect(next('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z')).toBe('2026-10-25T00:30:00.000Z');
    expect(next('30 2 * * *', 'Europe/Berlin', '2026-10-25T00:30:00Z')).toBe('2026-10-25T01:30:00.000Z');
    expect(next('30 2 * * *', 'Europe/Berlin', '2026-10-25T01:30:00Z')).toBe('2026-10-26T01:30:00.000Z');
  });

  it('fires at midnight after a spring-forward day, and at the first minute of a day whose midnight is skipped', () => {
    // Europe/Berlin springs forward on Sunday 2026-03-29: that day is 23 hours long.
    expect(next('0 0 * * 1', 'Europe/Berlin', '2026-03-28T12:00:00Z')).toBe('2026-03-29T22:00:00.000Z');
    expect(next('0 0 30 3 *', 'Europe/Berlin', '2026-03-20T00:00:00Z')).toBe('2026-03-29T22:00:00.000Z');
    // America/Havana springs from 00:00 to 01:00 on 2026-03-08: 01:00 is that day's first minute.
    expect(next('0 1 8 3 *', 'America/Havana', '2026-03-01T12:00:00Z')).toBe('2026-03-08T05:00:00.000Z');
    expect(next('0 0 8 3 *', 'America/Havana', '2026-03-01T12:00:00Z')).toBe('2027-03-08T05:00:00.000Z');
  });

  it('handles names, ranges, lists and day-of-week OR day-of-month', () => {
    expect(next('0 9 * * mon-fri', 'UTC', '2026-11-21T10:00:00Z')).toBe('2026-11-23T09:00:00.000Z'); // Sat → Mon
    expect(next('0 0 1 JAN,jul *', 'UTC', '2026-02-01T00:00:00Z')).toBe('2026-07-01T00:00:00.000Z');
    expect(next('0 0 13 * 5', 'UTC', '2026-11-01T00:00:00Z')).toBe('2026-11-06T00:00:00.000Z'); // a Friday before the 13th
  });

  it('answers never, without a search, for a day that no month named has', () => {
    for (const expr of [
      '0 0 30 2 *',
      '0 0 31 4 *',
      '0 0 31 2,4,6,9,11 *',
      '0 0 30,31 feb *',
      '0 0 30-31 2 *',
    ]) {
      expect(neverFires(parseCron(expr))).toBe(true);
      expect(search(expr, 'UTC', '2026-11-22T00:00:00Z')).toEqual({ at: 'never', steps: 0 });
    }
  });

  it("agrees with the API server's rule (NEVER_FIRING_CRON) wherever the rule speaks", () => {
    const refused = (expr: string) => NEVER_FIRING_CRON.some((re) => new RegExp(re).test(expr));
    const MONTHS = ['1', '2', '02', 'feb', 'APR', '4', '6', 'jun', '9', 'Sep', '11', 'nov', '12', 'jan'];
    const monthFields = MONTHS.flatMap((a) => [a, ...MONTHS.map((b) => `${a},${b}`)]);
    for (let d = 27; d <= 31; d++)
      for (let e = d; e <= 31; e++)
        for (const dom of [`${d}`, `${d},${e}`, `${d}-${e}`, `${d}/2`, `${e},${d}`])
          for (const month of monthFields) {
            const expr = `0 3 ${dom} ${month} *`;
            expect(refused(expr), expr).toBe(neverFires(parseCron(expr)));
          }
    // Where a weekday is named (either day field matches) or days are `*`, the rule holds back.
    for (const expr of ['0 0 31 2 1', '0 0 30 2 mon', '0 0 * 2 *', '0 0 31 2 */1', '@yearly'])
      expect(refused(expr), expr).toBe(false);
  });

  it('gives up a search after SEARCH_DAYS days, one step per day that does not match', () => {
    // No day at all (no parse makes this): neverFires cannot tell, the bounded search must.
    const none = { values: new Set<number>(), any: false };
    const noDay = { ...parseCron('0 0 1 * 1'), dom: none, dow: none };
    expect(neverFires(noDay)).toBe(false);
    expect(search(noDay, 'UTC', '2026-11-22T12:00:00Z')).toEqual({ at: 'never', steps: SEARCH_DAYS + 1 });
  });

  it('still finds rare dates, with day-of-week OR day-of-month', () => {
    expect(next('0 0 29 2 *', 'UTC', '2026-11-22T00:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
    // The longest gap there is: 2100 is no leap year.
    const gap = search('0 0 29 2 *', 'UTC', '2096-03-01T00:00:00Z');
    expect(gap.at).toBe('2104-02-29T00:00:00.000Z');
    expect(gap.steps).toBeLessThanOrEqual(SEARCH_DAYS);
    // Both day fields restricted: 29 February or any Monday in February (Vixie cron), so the
    // first Monday of February 2027, and a 31 February that is a Monday is no "never".
    expect(next('0 0 29 2 1', 'UTC', '2026-11-22T00:00:00Z')).toBe('2027-02-01T00:00:00.000Z');
    expect(neverFires(parseCron('0 0 31 2 mon'))).toBe(false);
    expect(next('0 0 31 2 mon', 'UTC', '2026-11-22T00:00:00Z')).toBe('2027-02-01T00:00:00.000Z');
  });

  it('refuses bad expressions and zones', () => {
    expect(() => parseCron('61 * * * *')).toThrow(CronError);
    expect(() => parseCron('every day')).toThrow(CronError);
    expect(() => nextFire(parseCron('@daily'), 'Mars/Olympus', new Date())).toThrow(/unknown time zone/);
  });
});
