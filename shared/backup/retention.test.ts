import { describe, expect, it } from 'vitest';
import { type BackupPhase, bucketOf, type RetentionCandidate, selectRetention } from './retention.ts';

const NOW = new Date('2026-12-31T12:00:00Z');
/** A backup taken at `at`; phase `none`: not started yet (no phase in its status). */
const done = (name: string, at: string, phase: BackupPhase | 'none' = 'Completed'): RetentionCandidate => ({
  name,
  phase: phase === 'none' ? undefined : phase,
  takenAt: new Date(at),
});
const names = (xs: readonly { name: string }[]) => xs.map((x) => x.name).sort();
const deleted = (...args: Parameters<typeof selectRetention>) => names(selectRetention(...args).delete);
const utc = { now: NOW, timeZone: 'UTC' };

describe('bucketOf', () => {
  it('reads the wall clock of the zone, across daylight saving time', () => {
    expect(bucketOf(new Date('2026-11-20T23:30:00Z'), 'day', 'UTC')).toBe('2026-11-20');
    expect(bucketOf(new Date('2026-11-20T23:30:00Z'), 'day', 'Europe/Berlin')).toBe('2026-11-21');
    // The spring-forward day: 22:30Z is already the next day in Berlin (+2 since 01:00Z).
    expect(bucketOf(new Date('2026-03-29T22:30:00Z'), 'day', 'Europe/Berlin')).toBe('2026-3-30');
    // Autumn's repeated 02:00 hour: two instants, one wall-clock hour.
    expect(bucketOf(new Date('2026-10-25T00:30:00Z'), 'hour', 'Europe/Berlin')).toBe(
      bucketOf(new Date('2026-10-25T01:30:00Z'), 'hour', 'Europe/Berlin'),
    );
    expect(bucketOf(new Date('2026-11-20T10:40:00Z'), 'hour', 'Asia/Kolkata')).toBe('2026-11-20T16');
  });

  it('names ISO weeks (Monday to Sunday) by their Monday, and months with their year', () => {
    expect(bucketOf(new Date('2026-11-22T12:00:00Z'), 'week', 'UTC')).toBe('W2026-11-16'); // a Sunday
    expect(bucketOf(new Date('2026-11-23T12:00:00Z'), 'week', 'UTC')).toBe('W2026-11-23'); // a Monday
    expect(bucketOf(new Date('2027-01-01T12:00:00Z'), 'week', 'UTC')).toBe('W2026-12-28');
    expect(bucketOf(new Date('2025-12-15T00:00:00Z'), 'month', 'UTC')).not.toBe(
      bucketOf(new Date('2026-12-15T00:00:00Z'), 'month', 'UTC'),
    );
  });
});

describe('selectRetention', () => {
  it('keeps everything without a policy, or with every count rule at 0', () => {
    const all = [
      done('a', '2026-01-01T00:00:00Z'),
      done('b', '2026-06-01T00:00:00Z'),
      done('c', '2026-12-01T00:00:00Z'),
    ];
    expect(deleted(all, undefined, utc)).toEqual([]);
    expect(deleted(all, {}, utc)).toEqual([]);
    expect(deleted(all, { keepLast: 0, keepDaily: 0, keepMonthly: 0 }, utc)).toEqual([]);
  });

  it('keepLast keeps the n newest Completed, whatever the order they come in', () => {
    const all = [
      done('b', '2026-12-30T02:00:00Z'),
      done('d', '2026-12-30T04:00:00Z'),
      done('a', '2026-12-30T01:00:00Z'),
      done('c', '2026-12-30T03:00:00Z'),
    ];
    const r = selectRetention(all, { keepLast: 2 }, utc);
    expect(r.keep.map((k) => k.name)).toEqual(['d', 'c']);
    expect(r.delete).toEqual([
      { name: 'b', reason: 'NotKept' },
      { name: 'a', reason: 'NotKept' },
    ]);
  });

  it('keepDaily keeps the newest of each of the n newest days, in the schedule’s time zone', () => {
    const all = [
      done('morning', '2026-11-20T10:00:00Z'),
      done('late', '2026-11-20T22:30:00Z'), // 23:30 on the 20th in Berlin
      done('after-midnight', '2026-11-20T23:30:00Z'), // 00:30 on the 21st in Berlin
    ];
    expect(deleted(all, { keepDaily: 2 }, { now: NOW, timeZone: 'Europe/Berlin' })).toEqual(['morning']);
    // In UTC all three are one day: only its newest is kept.
    expect(deleted(all, { keepDaily: 2 }, utc)).toEqual(['late', 'morning']);
  });

  it('keepDaily counts days by the wall clock across a spring-forward', () => {
    const all = [
      done('sat', '2026-03-28T12:00:00Z'),
      done('sun-night', '2026-03-29T21:45:00Z'), // 23:45 on the 29th (CEST)
      done('mon-early', '2026-03-29T22:30:00Z'), // 00:30 on the 30th (CEST); 23:30 at a fixed +1
    ];
    expect(deleted(all, { keepDaily: 2 }, { now: NOW, timeZone: 'Europe/Berlin' })).toEqual(['sat']);
  });

  it('keepHourly uses the zone’s hours, also where they are not UTC hours', () => {
    const all = [
      done('h9', '2026-11-20T09:50:00Z'), // 15:20 in Kolkata
      done('h10a', '2026-11-20T10:10:00Z'), // 15:40
      done('h10b', '2026-11-20T10:40:00Z'), // 16:10
    ];
    expect(deleted(all, { keepHourly: 2 }, { now: NOW, timeZone: 'Asia/Kolkata' })).toEqual(['h9']);
    expect(deleted(all, { keepHourly: 2 }, utc)).toEqual(['h10a']);
  });

  it('keepWeekly uses ISO weeks (from Monday)', () => {
    const all = [
      done('sat', '2026-11-21T12:00:00Z'),
      done('sun', '2026-11-22T12:00:00Z'),
      done('mon', '2026-11-23T12:00:00Z'),
    ];
    // Weeks from Sunday would keep mon and sat instead.
    expect(deleted(all, { keepWeekly: 2 }, utc)).toEqual(['sat']);
  });

  it('keepMonthly tells the same month of different years apart, and reads the zone', () => {
    const all = [
      done('nov-2025', '2025-11-10T00:00:00Z'),
      done('dec-2025', '2025-12-20T00:00:00Z'),
      done('dec-2026', '2026-12-05T00:00:00Z'),
    ];
    expect(deleted(all, { keepMonthly: 2 }, utc)).toEqual(['nov-2025']);
    const edge = [
      done('oct', '2026-10-15T00:00:00Z'),
      done('nov-end', '2026-11-30T20:00:00Z'),
      done('dec-first', '2026-11-30T23:30:00Z'), // 1 December in Berlin
    ];
    expect(deleted(edge, { keepMonthly: 2 }, { now: NOW, timeZone: 'Europe/Berlin' })).toEqual(['oct']);
    expect(deleted(edge, { keepMonthly: 2 }, utc)).toEqual(['nov-end']);
  });

  it('counts each rule on its own and keeps what any rule keeps (restic’s rules)', () => {
    const all = [
      done('y', '2026-12-30T09:00:00Z'),
      done('t1', '2026-12-31T01:00:00Z'),
      done('t2', '2026-12-31T02:00:00Z'),
      done('t3', '2026-12-31T03:00:00Z'),
    ];
    const r = selectRetention(all, { keepLast: 1, keepDaily: 2 }, utc);
    // t3 counts for keepLast and for today's keepDaily; yesterday's newest is y.
    expect(r.keep).toEqual([
      { name: 't3', reasons: ['keepLast', 'keepDaily', 'newest'] },
      { name: 'y', reasons: ['keepDaily'] },
    ]);
    expect(names(r.delete)).toEqual(['t1', 't2']);
    // Rules that cover more days keep more.
    expect(deleted(all, { keepLast: 2, keepMonthly: 1 }, utc)).toEqual(['t1', 'y']);
  });

  it('maxAge deletes older backups even when a rule would keep them, and alone prunes', () => {
    const all = [
      done('old', '2026-10-01T00:00:00Z'),
      done('mid', '2026-12-20T00:00:00Z'),
      done('new', '2026-12-31T00:00:00Z'),
    ];
    expect(selectRetention(all, { keepLast: 10, maxAge: '30d' }, utc).delete).toEqual([
      { name: 'old', reason: 'MaxAge' },
    ]);
    expect(deleted(all, { maxAge: '7d' }, utc)).toEqual(['mid', 'old']);
    // Exactly maxAge old is not older than it.
    expect(
      deleted([done('x', '2026-12-30T12:00:00Z'), done('y', NOW.toISOString())], { maxAge: '1d' }, utc),
    ).toEqual([]);
  });

  it('refuses a maxAge under a minute (a slip that would delete all but one), and takes one of a minute', () => {
    const all = [done('old', '2026-12-30T00:00:00Z'), done('new', NOW.toISOString())];
    for (const maxAge of ['0s', '0.5ms', '59s', '0m'])
      expect(() => selectRetention(all, { keepLast: 30, maxAge }, utc), maxAge).toThrow(/shorter than 1m/);
    expect(deleted(all, { maxAge: '1m' }, utc)).toEqual(['old']);
  });

  it('never deletes the newest Completed backup, even past maxAge or when newer ones failed', () => {
    const all = [
      done('c-old', '2026-01-01T00:00:00Z'),
      done('c-newest', '2026-02-01T00:00:00Z'),
      done('f', '2026-03-01T00:00:00Z', 'Failed'),
      done('p', '2026-04-01T00:00:00Z', 'Pending'),
    ];
    const r = selectRetention(all, { keepLast: 1, maxAge: '1h' }, utc);
    expect(r.keep).toEqual([{ name: 'c-newest', reasons: ['keepLast', 'newest'] }]);
    expect(r.delete).toEqual([
      { name: 'c-old', reason: 'MaxAge' },
      { name: 'f', reason: 'MaxAge' },
    ]);
    // Ties on time: one of them stays, and the same one every time.
    const tie = [done('n-1', '2026-01-01T00:00:00Z'), done('n-2', '2026-01-01T00:00:00Z')];
    expect(deleted(tie, { maxAge: '1h' }, utc)).toEqual(['n-1']);
    expect(deleted([...tie].reverse(), { maxAge: '1h' }, utc)).toEqual(['n-1']);
  });

  it('never deletes Pending or Running backups, or ones not started, however old', () => {
    const all = [
      done('p', '2025-01-01T00:00:00Z', 'Pending'),
      done('r', '2025-01-02T00:00:00Z', 'Running'),
      done('u', '2025-01-03T00:00:00Z', 'none'),
      done('c1', '2026-12-30T00:00:00Z'),
      done('c2', '2026-12-31T00:00:00Z'),
    ];
    expect(deleted(all, { keepLast: 1, maxAge: '1d' }, utc)).toEqual(['c1']);
  });

  it('keeps the newest few Failed backups, with or without a policy', () => {
    const failed = [1, 2, 3, 4, 5].map((d) => done(`f${d}`, `2026-12-0${d}T00:00:00Z`, 'Failed'));
    expect(selectRetention(failed, undefined, utc).delete).toEqual([
      { name: 'f2', reason: 'FailedBeyondBound' },
      { name: 'f1', reason: 'FailedBeyondBound' },
    ]);
    expect(deleted(failed, { keepLast: 100 }, { ...utc, failedKept: 1 })).toEqual(['f1', 'f2', 'f3', 'f4']);
    // Failed backups never count for keep rules, nor as the newest.
    const mixed = [done('c', '2026-12-01T00:00:00Z'), done('f', '2026-12-02T00:00:00Z', 'Failed')];
    expect(deleted(mixed, { keepLast: 1 }, utc)).toEqual([]);
  });

  it('refuses an unknown time zone instead of guessing one', () => {
    expect(() => selectRetention([], { keepDaily: 1 }, { now: NOW, timeZone: 'Mars/Olympus' })).toThrow(
      /unknown time zone "Mars\/Olympus"/,
    );
  });
});
