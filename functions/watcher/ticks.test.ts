import type { CloudEvent } from 'cloudevents';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EventType } from '../../shared/events/types.ts';
import { createLogger } from '../../shared/runtime/logger.ts';
import { createMetrics } from '../../shared/runtime/metrics.ts';
import { nextFire, parseCron } from './cron.ts';
import { createTicks, dueFires } from './ticks.ts';

// The real nextFire, counted: how often the clock searches for a schedule's next fire time.
vi.mock('./cron.ts', async (original) => {
  const cron = await original<typeof import('./cron.ts')>();
  return { ...cron, nextFire: vi.fn(cron.nextFire) };
});
const searches = vi.mocked(nextFire);

const at = (iso: string) => new Date(iso);

describe('dueFires', () => {
  it('is nothing before the first fire, then the latest fire and how many it stands for', () => {
    const hourly = parseCron('0 * * * *');
    expect(dueFires(hourly, 'UTC', at('2026-11-22T10:00:00Z'), at('2026-11-22T10:59:59Z'))).toBeUndefined();
    expect(dueFires(hourly, 'UTC', at('2026-11-22T10:00:00Z'), at('2026-11-22T11:00:00Z'))).toEqual({
      latest: at('2026-11-22T11:00:00Z'),
      missed: 0,
    });
    // Down from 10:30 to 14:10: 11, 12, 13 were missed, 14 is the one to run.
    expect(dueFires(hourly, 'UTC', at('2026-11-22T10:30:00Z'), at('2026-11-22T14:10:00Z'))).toEqual({
      latest: at('2026-11-22T14:00:00Z'),
      missed: 3,
    });
  });
});

describe('ticks', () => {
  const stops: (() => void)[] = [];
  afterEach(() => {
    for (const s of stops.splice(0)) s();
  });

  const setup = (now: { t: Date }) => {
    const events: CloudEvent<unknown>[] = [];
    const ticks = createTicks({
      source: '/s',
      publisher: {
        publish: async (e) => {
          events.push(e);
          return { duplicate: false, seq: events.length };
        },
      },
      log: createLogger({}, { write: () => undefined }),
      metrics: createMetrics(),
      healthIntervalMs: 3_600_000,
      scheduleCheckMs: 3_600_000,
      clock: () => now.t,
    });
    stops.push(ticks.stop);
    return { events, ticks };
  };
  const schedule = (spec: Record<string, unknown>, status: Record<string, unknown> = {}) => ({
    metadata: { name: 'nightly', namespace: 'ns', uid: 'u1', creationTimestamp: '2026-11-20T00:00:00Z' },
    spec,
    status,
  });

  it('ticks a schedule once per fire, with a deterministic id, and counts fires missed before', async () => {
    const now = { t: at('2026-11-22T03:00:30Z') };
    const { events, ticks } = setup(now);
    ticks.list('BackupSchedule', [
      schedule({ schedule: '0 3 * * *' }, { lastScheduleTime: '2026-11-21T03:00:00Z' }),
    ]);
    await ticks.checkSchedules();
    await ticks.checkSchedules();
    expect(events.map((e) => e.data)).toMatchObject([
      { scheduledTime: '2026-11-22T03:00:00.000Z', missedBefore: 0 },
    ]);

    // A second watcher (after failover) computes the same tick, so the stream drops it.
    const other = setup(now);
    other.ticks.list('BackupSchedule', [
      schedule({ schedule: '0 3 * * *' }, { lastScheduleTime: '2026-11-21T03:00:00Z' }),
    ]);
    await other.ticks.checkSchedules();
    expect(other.events[0]?.id).toBe(events[0]?.id);

    // Down for three days: one tick, for the latest fire.
    now.t = at('2026-11-25T09:00:00Z');
    await ticks.checkSchedules();
    expect(events.at(-1)?.data).toMatchObject({ scheduledTime: '2026-11-25T03:00:00.000Z', missedBefore: 2 });
  });

  it('looks at a schedule with maxAge once an hour, suspended or not, each at its own minute, and never at one without', async () => {
    const now = { t: at('2026-11-22T12:00:00Z') };
    const { events, ticks } = setup(now);
    const named = (name: string, uid: string, spec: Record<string, unknown>) => ({
      ...schedule(spec),
      metadata: { name, namespace: 'ns', uid, creationTimestamp: '2026-11-20T00:00:00Z' },
    });
    ticks.list('BackupSchedule', [
      named('nightly', 'u1', { schedule: '0 3 1 * *', suspend: true, retention: { maxAge: '7d' } }),
      named('monthly', 'u2', { schedule: '0 3 1 * *', retention: { maxAge: '7d' } }),
      named('kept', 'u3', { schedule: '0 3 1 * *', suspend: true, retention: { keepLast: 3 } }),
    ]);
    const looks = () =>
      events.filter((e) => e.type === EventType.retentionTick).map((e) => e.subject?.split('/').at(-1));
    // First seen: none yet (a watcher starting does not send them all at once).
    await ticks.checkSchedules();
    expect(looks()).toEqual([]);
    // Minute by minute for an hour: one look each, at its own minute.
    const minutes: Record<string, number> = {};
    for (let m = 1; m <= 60; m++) {
      now.t = new Date(at('2026-11-22T12:00:00Z').getTime() + m * 60_000);
      const before = looks().length;
      await ticks.checkSchedules();
      for (const name of looks().slice(before)) minutes[name ?? ''] = m;
    }
    expect(looks().sort()).toEqual(['monthly', 'nightly']);
    expect(minutes.nightly).not.toBe(minutes.monthly);
    expect(events.every((e) => e.type === EventType.retentionTick)).toBe(true);
    // The period's id: a second watcher's look in the same period is a duplicate the stream drops.
    const other = setup(now);
    other.ticks.list('BackupSchedule', [
      named('nightly', 'u1', { schedule: '0 3 1 * *', suspend: true, retention: { maxAge: '7d' } }),
    ]);
    await other.ticks.checkSchedules();
    now.t = new Date(now.t.getTime() + 3_600_000);
    await other.ticks.checkSchedules();
    await ticks.checkSchedules();
    const last = events.filter((e) => e.subject?.endsWith('/nightly')).at(-1);
    expect(other.events.at(-1)?.id).toBe(last?.id);
  });

  it('counts a changed cron or zone from the change: no fire of the new one before it', async () => {
    const now = { t: at('2026-11-22T03:00:30Z') };
    const { events, ticks } = setup(now);
    ticks.list('BackupSchedule', [
      schedule({ schedule: '0 3 * * *' }, { lastScheduleTime: '2026-11-21T03:00:00Z' }),
    ]);
    await ticks.checkSchedules();
    expect(events).toHaveLength(1);
    now.t = at('2026-11-22T10:00:00Z');
    ticks.observe(
      'BackupSchedule',
      'MODIFIED',
      schedule({ schedule: '0 */6 * * *' }, { lastScheduleTime: '2026-11-22T03:00:00Z' }),
    );
    await ticks.checkSchedules();
    expect(events).toHaveLength(1); // not 06:00, four hours late
    now.t = at('2026-11-22T12:00:01Z');
    await ticks.checkSchedules();
    expect(events.at(-1)?.data).toMatchObject({ scheduledTime: '2026-11-22T12:00:00.000Z', missedBefore: 0 });
    // A zone set right (from one that cannot be read) too: the run due meanwhile is not ticked late.
    ticks.observe(
      'BackupSchedule',
      'MODIFIED',
      schedule(
        { schedule: '0 */6 * * *', timeZone: 'Europe/Berln' },
        { lastScheduleTime: '2026-11-22T12:00:00Z' },
      ),
    );
    now.t = at('2026-11-22T18:00:30Z');
    await ticks.checkSchedules();
    now.t = at('2026-11-22T19:00:00Z');
    ticks.observe(
      'BackupSchedule',
      'MODIFIED',
      schedule({ schedule: '0 */6 * * *', timeZone: 'UTC' }, { lastScheduleTime: '2026-11-22T12:00:00Z' }),
    );
    await ticks.checkSchedules();
    expect(events).toHaveLength(2); // not 18:00, an hour late
  });

  it('starts, as a new leader, after the recorded change of a cron: never a fire from before it', async () => {
    const now = { t: at('2026-11-22T10:02:00Z') };
    const { events, ticks } = setup(now);
    const status = {
      lastScheduleTime: '2026-11-22T03:00:00Z',
      schedule: { expression: '0 */6 * * *', timeZone: 'UTC', since: '2026-11-22T10:00:00Z' },
    };
    ticks.list('BackupSchedule', [schedule({ schedule: '0 */6 * * *' }, status)]);
    await ticks.checkSchedules();
    expect(events).toEqual([]); // not 06:00
    now.t = at('2026-11-22T12:00:01Z');
    await ticks.checkSchedules();
    expect(events.map((e) => e.data)).toMatchObject([
      { scheduledTime: '2026-11-22T12:00:00.000Z', missedBefore: 0 },
    ]);
    // A record of another schedule (the change not seen yet by the function) is not taken.
    const other = setup({ t: at('2026-11-22T10:02:00Z') });
    other.ticks.list('BackupSchedule', [schedule({ schedule: '0 */4 * * *' }, status)]);
    await other.ticks.checkSchedules();
    expect(other.events.map((e) => e.data)).toMatchObject([{ scheduledTime: '2026-11-22T08:00:00.000Z' }]);
  });

  it('does not replay a suspended period on resume', async () => {
    const now = { t: at('2026-11-22T12:00:00Z') };
    const { events, ticks } = setup(now);
    ticks.list('BackupSchedule', [schedule({ schedule: '0 * * * *', suspend: true })]);
    await ticks.checkSchedules();
    now.t = at('2026-11-22T15:30:00Z');
    await ticks.checkSchedules();
    expect(events).toEqual([]);
    ticks.observe('BackupSchedule', 'MODIFIED', schedule({ schedule: '0 * * * *', suspend: false }));
    now.t = at('2026-11-22T16:00:01Z');
    await ticks.checkSchedules();
    expect(events.map((e) => e.data)).toMatchObject([
      { scheduledTime: '2026-11-22T16:00:00.000Z', missedBefore: 0 },
    ]);
  });

  it('skips a schedule it cannot parse and keeps ticking the others', async () => {
    const now = { t: at('2026-11-22T12:00:30Z') };
    const { events, ticks } = setup(now);
    ticks.list('BackupSchedule', [
      { ...schedule({ schedule: 'every day' }), metadata: { name: 'bad', namespace: 'ns', uid: 'u0' } },
      schedule({ schedule: '0 12 * * *' }),
    ]);
    await ticks.checkSchedules();
    expect(events.map((e) => e.name)).toEqual(['nightly']);
  });

  it('searches for the next fire once per change, not on every check, and never for one that cannot fire', async () => {
    const now = { t: at('2026-11-22T12:00:30Z') };
    const { events, ticks } = setup(now);
    ticks.list('BackupSchedule', [
      { ...schedule({ schedule: '0 0 30 2 *' }), metadata: { name: 'never', namespace: 'ns', uid: 'u0' } },
      schedule({ schedule: '0 0 29 2 *' }),
    ]);
    searches.mockClear();
    for (let i = 0; i < 5; i++) {
      now.t = new Date(now.t.getTime() + 1000);
      await ticks.checkSchedules();
    }
    expect(searches).toHaveBeenCalledTimes(2);
    expect(searches.mock.results.map((r) => r.value)).toEqual(['never', at('2028-02-29T00:00:00Z')]);
    // A changed schedule is searched again, once.
    ticks.observe('BackupSchedule', 'MODIFIED', {
      ...schedule({ schedule: '0 0 1 3 *' }),
      metadata: { name: 'never', namespace: 'ns', uid: 'u0' },
    });
    await ticks.checkSchedules();
    await ticks.checkSchedules();
    expect(searches).toHaveBeenCalledTimes(3);
    expect(events).toEqual([]);
    expect(
      dueFires(parseCron('0 0 31 4 *'), 'UTC', at('2026-01-01T00:00:00Z'), at('2036-01-01T00:00:00Z')),
    ).toBe(undefined);
  });

  it('forgets deleted schedules', async () => {
    const now = { t: at('2026-11-22T12:00:30Z') };
    const { events, ticks } = setup(now);
    ticks.list('BackupSchedule', [schedule({ schedule: '0 12 * * *' })]);
    ticks.observe('BackupSchedule', 'DELETED', schedule({ schedule: '0 12 * * *' }));
    await ticks.checkSchedules();
    ticks.list('BackupSchedule', []);
    expect(events).toEqual([]);
  });

  it('ticks the clusters of every engine that asks, each of its own kind; a list of one kind forgets only that kind’s', async () => {
    const events: CloudEvent<unknown>[] = [];
    const ticks = createTicks({
      source: '/s',
      publisher: {
        publish: async (e) => {
          events.push(e);
          return { duplicate: false, seq: events.length };
        },
      },
      log: createLogger({}, { write: () => undefined }),
      metrics: createMetrics(),
      healthIntervalMs: 20,
      scheduleCheckMs: 3_600_000,
    });
    stops.push(ticks.stop);
    const obj = (uid: string) => ({ metadata: { name: 'main', namespace: 'ns', uid } });
    ticks.list('RedisCluster', [obj('r1')]);
    ticks.list('EtcdCluster', [obj('e1')]);
    ticks.list('Backup', [obj('b1')]);
    await vi.waitFor(() => {
      const kinds = new Set(events.map((e) => (e as unknown as { kind: string }).kind));
      expect([...kinds].sort()).toEqual(['EtcdCluster', 'RedisCluster']);
    });
    // The Redis list comes back empty: the etcd cluster keeps its ticks.
    ticks.list('RedisCluster', []);
    await new Promise((r) => setTimeout(r, 30));
    events.length = 0;
    await vi.waitFor(() => expect(events.length).toBeGreaterThan(1));
    expect(new Set(events.map((e) => (e as unknown as { kind: string }).kind))).toEqual(
      new Set(['EtcdCluster']),
    );
  });
});
