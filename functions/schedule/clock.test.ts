import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { TerminalError } from '../../shared/runtime/handler.ts';
import { fireAfter, firesBetween, readClock } from './clock.ts';
import { pollDelayMs } from './index.ts';
import { parseTick } from './tick.ts';

describe('readClock', () => {
  it('reads the cron in the schedule’s zone, UTC by default', () => {
    const after = new Date('2026-11-22T12:00:00Z');
    expect(fireAfter(readClock({ schedule: '0 3 * * *' }), after)).toEqual(new Date('2026-11-23T03:00:00Z'));
    expect(fireAfter(readClock({ schedule: '0 3 * * *', timeZone: 'Europe/Berlin' }), after)).toEqual(
      new Date('2026-11-23T02:00:00Z'),
    );
    expect(fireAfter(readClock({ schedule: '0 0 30 2 *' }), after)).toBe('never');
  });

  it('names what is wrong with a schedule or zone instead of throwing', () => {
    const zone = readClock({ schedule: '@daily', timeZone: 'Mars/Olympus' });
    expect(zone).toMatchObject({ zoneKnown: false, problem: { reason: 'InvalidTimeZone' } });
    expect(fireAfter(zone, new Date())).toBeUndefined();
    const cron = readClock({ schedule: '61 * * * *' });
    expect(cron).toMatchObject({ zoneKnown: true, problem: { reason: 'InvalidSchedule' } });
    expect(cron.problem?.message).toContain('"61" is out of range 0-59');
  });
});

describe('firesBetween', () => {
  it('counts the fires strictly between two instants, in the zone', () => {
    const hourly = readClock({ schedule: '0 * * * *' });
    const [from, to] = [new Date('2026-11-22T10:00:00Z'), new Date('2026-11-22T14:00:00Z')];
    expect(firesBetween(hourly, from, to)).toBe(3); // 11, 12, 13
    expect(firesBetween(hourly, from, new Date('2026-11-22T11:00:00Z'))).toBe(0);
    expect(firesBetween(hourly, to, from)).toBe(0);
    // 03:00 in Berlin is 02:00 UTC in winter: one fire between 01:30 and 02:30 UTC, none in UTC's zone.
    const [a, b] = [new Date('2026-11-22T01:30:00Z'), new Date('2026-11-22T02:30:00Z')];
    expect(firesBetween(readClock({ schedule: '0 3 * * *', timeZone: 'Europe/Berlin' }), a, b)).toBe(1);
    expect(firesBetween(readClock({ schedule: '0 3 * * *' }), a, b)).toBe(0);
    expect(firesBetween(readClock({ schedule: 'nonsense' }), from, to)).toBe(0);
  });
});

describe('parseTick', () => {
  const tick = (data: unknown) =>
    new CloudEvent({
      id: 'x',
      source: '/s',
      type: 'dev.tideway.tick.schedule',
      datacontenttype: 'application/json',
      data,
    });

  it('reads the run time and the runs folded into it', () => {
    expect(parseTick(tick({ scheduledTime: '2026-11-22T03:00:00.000Z', missedBefore: 2 }))).toEqual({
      scheduledTime: new Date('2026-11-22T03:00:00Z'),
      missedBefore: 2,
    });
    expect(parseTick(tick({ scheduledTime: '2026-11-22T03:00:00Z' })).missedBefore).toBe(0);
  });

  it('fails for good on a tick without a valid time', () => {
    expect(() => parseTick(tick({ missedBefore: 1 }))).toThrow(TerminalError);
    expect(() => parseTick(tick({ scheduledTime: 'yesterday' }))).toThrow(/scheduledTime/);
  });
});

describe('pollDelayMs', () => {
  it('starts at a second and doubles up to 30 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 100].map(pollDelayMs)).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });
});
