import { describe, expect, it } from 'vitest';
import { CronError, nextFire, parseCron } from './cron.ts';

const next = (expr: string, tz: string, after: string) =>
  nextFire(parseCron(expr), tz, new Date(after)).toISOString();

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

  it('handles names, ranges, lists and day-of-week OR day-of-month', () => {
    expect(next('0 9 * * mon-fri', 'UTC', '2026-11-21T10:00:00Z')).toBe('2026-11-23T09:00:00.000Z'); // Sat → Mon
    expect(next('0 0 1 JAN,jul *', 'UTC', '2026-02-01T00:00:00Z')).toBe('2026-07-01T00:00:00.000Z');
    expect(next('0 0 13 * 5', 'UTC', '2026-11-01T00:00:00Z')).toBe('2026-11-06T00:00:00.000Z'); // a Friday before the 13th
  });

  it('refuses bad expressions and zones', () => {
    expect(() => parseCron('61 * * * *')).toThrow(CronError);
    expect(() => parseCron('every day')).toThrow(CronError);
    expect(() => nextFire(parseCron('@daily'), 'Mars/Olympus', new Date())).toThrow(/unknown time zone/);
  });
});
