import { describe, expect, it } from 'vitest';
import { recordsSchedule } from './schedule.ts';

describe('recordsSchedule', () => {
  it('is true only for the same cron in the same zone (no zone is UTC)', () => {
    const record = { expression: '0 3 * * *', timeZone: 'UTC' };
    expect(recordsSchedule(record, { schedule: '0 3 * * *' })).toBe(true);
    expect(recordsSchedule(record, { schedule: '0 3 * * *', timeZone: 'UTC' })).toBe(true);
    expect(recordsSchedule(record, { schedule: '0 3 * * *', timeZone: 'Europe/Berlin' })).toBe(false);
    expect(recordsSchedule(record, { schedule: '0 4 * * *', timeZone: 'UTC' })).toBe(false);
    expect(recordsSchedule(undefined, { schedule: '0 3 * * *' })).toBe(false);
  });
});
