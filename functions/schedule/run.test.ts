import { describe, expect, it } from 'vitest';
import { countFrom, decideRun, type RunInput } from './run.ts';

const at = (iso: string) => new Date(iso);
const S = at('2026-11-22T03:00:00Z');

/** A daily run at 03:00, one second after it fired, nothing else going on. */
const input = (over: Partial<RunInput> = {}): RunInput => ({
  scheduledTime: S,
  missedBefore: 0,
  now: at('2026-11-22T03:00:01Z'),
  lastScheduleTime: at('2026-11-21T03:00:00Z'),
  suspend: false,
  startingDeadlineSeconds: 300,
  concurrencyPolicy: 'Forbid',
  nextAfter: at('2026-11-23T03:00:00Z'),
  clusterExists: true,
  made: false,
  active: [],
  replaceable: [],
  ...over,
});

describe('decideRun', () => {
  it('makes the Backup of a run that is due', () => {
    expect(decideRun(input())).toEqual({
      kind: 'create',
      reason: 'BackupCreated',
      replace: [],
      missed: 0,
      made: false,
    });
    // The first run of a new schedule has no lastScheduleTime.
    expect(decideRun(input({ lastScheduleTime: undefined })).kind).toBe('create');
  });

  it('does nothing for a run already handled: a redelivered or late duplicate tick', () => {
    expect(decideRun(input({ lastScheduleTime: S }))).toEqual({ kind: 'ignore', why: 'AlreadyHandled' });
    expect(decideRun(input({ lastScheduleTime: at('2026-11-23T03:00:00Z') }))).toEqual({
      kind: 'ignore',
      why: 'AlreadyHandled',
    });
  });

  it('records a Backup made before a crash instead of making another', () => {
    expect(decideRun(input({ made: true, active: [] }))).toMatchObject({
      kind: 'create',
      made: true,
      replace: [],
    });
    // With Replace, what the dead delivery did not get to delete yet is still replaced.
    const again = input({ made: true, active: ['a'], replaceable: ['a'], concurrencyPolicy: 'Replace' });
    expect(decideRun(again)).toMatchObject({
      kind: 'create',
      made: true,
      reason: 'Replaced',
      replace: ['a'],
    });
    expect(decideRun({ ...again, concurrencyPolicy: 'Forbid' })).toMatchObject({ replace: [] });
    // Even past the deadline by now: the run was made in time.
    expect(decideRun(input({ made: true, now: at('2026-11-22T04:00:00Z') }))).toMatchObject({ made: true });
  });

  it('makes nothing while suspended, and records nothing', () => {
    expect(decideRun(input({ suspend: true }))).toEqual({ kind: 'ignore', why: 'Suspended' });
  });

  it('runs within startingDeadlineSeconds, skips and counts a run older than that', () => {
    expect(decideRun(input({ now: at('2026-11-22T03:05:00Z') })).kind).toBe('create'); // exactly 300 s
    expect(decideRun(input({ now: at('2026-11-22T03:05:01Z') }))).toMatchObject({
      kind: 'skip',
      reason: 'MissedDeadline',
      missed: 1,
    });
    expect(decideRun(input({ startingDeadlineSeconds: 0, now: at('2026-11-22T03:00:00.500Z') })).kind).toBe(
      'skip',
    );
  });

  it('after downtime runs the latest once and counts the older ones; past the deadline counts all', () => {
    // The watcher folds the fires it missed into one tick for the latest.
    expect(decideRun(input({ missedBefore: 2, now: at('2026-11-22T03:02:00Z') }))).toMatchObject({
      kind: 'create',
      missed: 2,
    });
    expect(decideRun(input({ missedBefore: 2, now: at('2026-11-22T03:30:00Z') }))).toMatchObject({
      kind: 'skip',
      reason: 'MissedDeadline',
      missed: 3,
    });
  });

  it('skips a run whose successor is already due (its own tick follows), however long the deadline', () => {
    const perMinute = input({
      scheduledTime: at('2026-11-22T03:01:00Z'),
      nextAfter: at('2026-11-22T03:02:00Z'),
      lastScheduleTime: at('2026-11-22T03:00:00Z'),
      startingDeadlineSeconds: 3600,
    });
    expect(decideRun({ ...perMinute, now: at('2026-11-22T03:01:59Z') }).kind).toBe('create');
    expect(decideRun({ ...perMinute, now: at('2026-11-22T03:02:10Z'), missedBefore: 1 })).toMatchObject({
      kind: 'skip',
      reason: 'Superseded',
      missed: 2,
    });
    // A schedule that never fires again supersedes nothing.
    expect(decideRun({ ...perMinute, nextAfter: 'never', now: at('2026-11-22T03:02:10Z') }).kind).toBe(
      'create',
    );
  });

  it('Forbid skips while another Backup of the schedule is unfinished; Replace replaces it', () => {
    expect(decideRun(input({ active: ['nightly-202611210300'] }))).toMatchObject({
      kind: 'skip',
      reason: 'SkippedConcurrent',
      missed: 0,
    });
    expect(
      decideRun(
        input({ active: ['a', 'b', 'later'], replaceable: ['a', 'b'], concurrencyPolicy: 'Replace' }),
      ),
    ).toEqual({
      kind: 'create',
      reason: 'Replaced',
      replace: ['a', 'b'],
      missed: 0,
      made: false,
    });
    // A later run's Backup alone (its tick came first): made beside it, not replacing it.
    expect(decideRun(input({ active: ['later'], concurrencyPolicy: 'Replace' }))).toMatchObject({
      reason: 'BackupCreated',
      replace: [],
    });
    // The downtime count survives either way.
    expect(decideRun(input({ active: ['a'], missedBefore: 4 }))).toMatchObject({ missed: 4 });
  });

  it('skips a run of a cluster that does not exist, saying which field to fix', () => {
    const d = decideRun(input({ clusterExists: false }));
    expect(d).toMatchObject({ kind: 'skip', reason: 'ClusterNotFound', missed: 0 });
    expect(d.kind === 'skip' && d.message).toMatch(/spec\.cluster\.name/);
  });
});

describe('countFrom', () => {
  const created = at('2026-11-01T00:00:00Z');
  const last = at('2026-11-20T03:00:00Z');
  const ready = (status: string, since: string) => ({ status, lastTransitionTime: since });

  it('counts from the last run handled, or from the creation before the first', () => {
    expect(countFrom({ scheduledTime: S, lastScheduleTime: last, created, ready: undefined })).toEqual(last);
    expect(countFrom({ scheduledTime: S, lastScheduleTime: undefined, created, ready: undefined })).toEqual(
      created,
    );
    expect(
      countFrom({
        scheduledTime: S,
        lastScheduleTime: last,
        created,
        ready: ready('True', '2026-11-02T00:00:00Z'),
      }),
    ).toEqual(last);
  });

  it('not before the schedule became Ready again: suspended runs were not missed', () => {
    // Suspended from the 20th, resumed on the 21st at noon: the run on the 21st was not missed.
    expect(
      countFrom({
        scheduledTime: S,
        lastScheduleTime: last,
        created,
        ready: ready('True', '2026-11-21T12:00:00Z'),
      }),
    ).toEqual(at('2026-11-21T12:00:00Z'));
    // The resume not seen yet (the status still says Suspended): nothing before this run counts.
    expect(
      countFrom({
        scheduledTime: S,
        lastScheduleTime: last,
        created,
        ready: ready('False', '2026-11-20T04:00:00Z'),
      }),
    ).toEqual(S);
  });
});
