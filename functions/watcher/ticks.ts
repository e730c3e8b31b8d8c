import { createHash } from 'node:crypto';
import { recordsSchedule } from '../../shared/api/schedule.ts';
import type { EventPublisher } from '../../shared/bus/types.ts';
import { ENGINES } from '../../shared/engines/index.ts';
import { EventType } from '../../shared/events/types.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { Metrics } from '../../shared/runtime/metrics.ts';
import { type Cron, nextFire, parseCron } from './cron.ts';
import { tickEvent } from './events.ts';
import type { KubeObj } from './kinds.ts';

type Schedule = KubeObj & {
  metadata?: KubeObj['metadata'] & { creationTimestamp?: string | Date };
  spec?: { schedule?: string; timeZone?: string; suspend?: boolean; retention?: { maxAge?: string } };
  status?: {
    lastScheduleTime?: string;
    /** The schedule in force and since when (the schedule function's record). */
    schedule?: { expression?: string; timeZone?: string; since?: string };
  };
};

export type TicksOptions = {
  source: string;
  publisher: EventPublisher;
  log: Logger;
  metrics: Metrics;
  healthIntervalMs: number;
  /** How often schedules are checked; a tick is late by at most this. */
  scheduleCheckMs?: number;
  /** How often a schedule with `retention.maxAge` is looked at between its runs (default 1 h). */
  retentionLookMs?: number;
  clock?: () => Date;
};

/** Fires strictly after `after` and no later than `now`: the latest, and how many came before it. */
export const dueFires = (cron: Cron, timeZone: string, after: Date, now: Date, cap = 10_000) => {
  let latest: Date | undefined;
  let missed = 0;
  for (
    let t = nextFire(cron, timeZone, after);
    t !== 'never' && t <= now && missed < cap;
    t = nextFire(cron, timeZone, t)
  ) {
    if (latest) missed++;
    latest = t;
  }
  return latest ? { latest, missed } : undefined;
};

const toDate = (v: string | Date | undefined) => (v ? new Date(v) : undefined);

const latestOf = (first: Date, ...others: (Date | undefined)[]) =>
  others.reduce<Date>((a, b) => (b && b > a ? b : a), first);

/** Where in each period a schedule's retention look falls: spread by its uid, the same everywhere. */
export const offsetOf = (uid: string, periodMs: number) =>
  Number(BigInt(`0x${createHash('sha256').update(uid).digest('hex').slice(0, 12)}`) % BigInt(periodMs));

/** Cluster kinds whose engine wants health ticks. */
const TICKED = new Set(ENGINES.filter((e) => e.healthTicks).map((e) => e.cluster.kind));

/** A schedule's next fire time, and what it was computed from. */
type Plan = { key: string; text: string; cron: Cron; next: Date | 'never' };

/**
 * The watcher is the clock: a health tick per cluster (of an engine that wants them) every interval, and a schedule tick per
 * BackupSchedule when its cron fires (and, for one with retention.maxAge, a retention look every hour). Tick ids are deterministic (object uid + period or scheduled
 * time), so a tick from a new leader after failover is a duplicate the stream drops. After
 * downtime one tick carries the latest missed fire time and how many fires came before it; the
 * schedule function applies startingDeadlineSeconds and counts missed runs.
 */
export const createTicks = (o: TicksOptions) => {
  const clock = o.clock ?? (() => new Date());
  /** uid → the cluster's kind and name: all a health tick needs. */
  const clusters = new Map<string, { kind: string; obj: KubeObj }>();
  const schedules = new Map<
    string,
    { obj: Schedule; lastFired?: Date; seen?: Date; plan?: Plan; looked?: number; offset?: number }
  >();
  const lookMs = o.retentionLookMs ?? 3_600_000;
  let healthBusy = false;
  let scheduleBusy = false;

  const publish = async (event: ReturnType<typeof tickEvent>) => {
    await o.publisher.publish(event);
    o.metrics.inc('tideway_watcher_ticks_total', { type: event.type });
  };

  const health = async () => {
    if (healthBusy) return;
    healthBusy = true;
    const slot = String(Math.floor(clock().getTime() / o.healthIntervalMs));
    try {
      await Promise.all(
        [...clusters.values()].map((c) =>
          publish(tickEvent(o.source, EventType.healthTick, c.kind, c.obj, slot)).catch((error: unknown) =>
            o.log.debug('health tick not published', { kind: c.kind, name: c.obj.metadata?.name, error }),
          ),
        ),
      );
    } finally {
      healthBusy = false;
    }
  };

  const checkSchedules = async () => {
    if (scheduleBusy) return;
    scheduleBusy = true;
    const now = clock();
    try {
      for (const [uid, s] of schedules) {
        const spec = s.obj.spec ?? {};
        if (spec.suspend || !spec.schedule) {
          s.lastFired = now; // resuming does not replay the suspended period
          continue;
        }
        try {
          const timeZone = spec.timeZone || 'UTC';
          // Without a creation time, from when first seen (not from now: that would move every check).
          s.seen ??= now;
          const created = toDate(s.obj.metadata?.creationTimestamp) ?? s.seen;
          const last = toDate(s.obj.status?.lastScheduleTime);
          // Not before the schedule in force took effect, as recorded: a new leader must not tick
          // a fire of a changed cron from before the change.
          const r = s.obj.status?.schedule;
          const since = recordsSchedule(r, spec) ? toDate(r?.since) : undefined;
          const after = s.lastFired ?? latestOf(created, last, since);
          // The next fire is searched for once per change of schedule, zone or last fire, not
          // every check: for a rare schedule that search walks years of days.
          const key = `${spec.schedule}\n${timeZone}\n${after.getTime()}`;
          if (s.plan?.key !== key) {
            const cron = s.plan?.text === spec.schedule ? s.plan.cron : parseCron(spec.schedule);
            const next = nextFire(cron, timeZone, after);
            if (next === 'never')
              o.log.info('schedule never fires', { uid, schedule: spec.schedule, timeZone });
            s.plan = { key, text: spec.schedule, cron, next };
          }
          if (s.plan.next === 'never' || s.plan.next > now) continue;
          const due = dueFires(s.plan.cron, timeZone, after, now);
          if (!due) continue;
          await publish(
            tickEvent(o.source, EventType.scheduleTick, 'BackupSchedule', s.obj, due.latest.toISOString(), {
              scheduledTime: due.latest.toISOString(),
              missedBefore: due.missed,
            }),
          );
          s.lastFired = due.latest;
        } catch (error) {
          // A bad schedule is the schedule function's to report (it sees the object too); keep going.
          o.log.debug('schedule not ticked', { uid, error });
        }
      }
      await retentionLooks(now);
    } finally {
      scheduleBusy = false;
    }
  };

  /**
   * maxAge prunes with time alone, while suspended or between rare runs: a retention look per
   * schedule with maxAge every period, after the runs' ticks, at an offset of its own within the
   * period (so that looks do not all come at the top of the hour); its id is the period's.
   */
  const retentionLooks = async (now: Date) => {
    for (const [uid, s] of schedules) {
      if (!s.obj.spec?.retention?.maxAge) continue;
      s.offset ??= offsetOf(uid, lookMs); // a hash: once per schedule, not every check
      const period = Math.floor((now.getTime() - s.offset) / lookMs);
      // First seen (a watcher starting): at its own offset, not all at once ahead of the ticks.
      s.looked ??= period;
      if (s.looked === period) continue;
      await publish(
        tickEvent(o.source, EventType.retentionTick, 'BackupSchedule', s.obj, String(period)),
      ).then(
        () => {
          s.looked = period;
        },
        (error: unknown) => o.log.debug('retention look not published', { uid, error }),
      );
    }
  };

  const healthTimer = setInterval(() => void health(), o.healthIntervalMs);
  const scheduleTimer = setInterval(() => void checkSchedules(), o.scheduleCheckMs ?? 1000);

  const put = (kind: string, obj: KubeObj) => {
    const uid = obj.metadata?.uid;
    if (!uid) return;
    // A health tick needs only the name: 10,000 clusters must not mean 10,000 objects in memory.
    if (TICKED.has(kind))
      clusters.set(uid, {
        kind,
        obj: { metadata: { namespace: obj.metadata?.namespace, name: obj.metadata?.name, uid } },
      });
    if (kind === 'BackupSchedule') {
      const s = schedules.get(uid);
      const next = obj as Schedule;
      // A new cron or zone counts from now: its fires before the change never existed.
      const zone = (o?: Schedule) => o?.spec?.timeZone || 'UTC';
      const changed = s && (s.obj.spec?.schedule !== next.spec?.schedule || zone(s.obj) !== zone(next));
      schedules.set(uid, { ...s, obj: next, ...(changed ? { lastFired: clock() } : {}) });
    }
  };
  /** The uids known of one kind (clusters of every engine share one map). */
  const known = (kind: string): string[] =>
    TICKED.has(kind)
      ? [...clusters].filter(([, c]) => c.kind === kind).map(([uid]) => uid)
      : kind === 'BackupSchedule'
        ? [...schedules.keys()]
        : [];
  /** A complete list of one kind, page by page; objects not seen by its end are gone. */
  const beginList = (kind: string) => {
    const uids = new Set<string | undefined>();
    return {
      page: (objs: readonly KubeObj[]) => {
        for (const x of objs) {
          uids.add(x.metadata?.uid);
          put(kind, x);
        }
      },
      end: () => {
        for (const uid of known(kind)) if (!uids.has(uid)) remove(kind, uid);
      },
    };
  };

  const remove = (kind: string, uid: string | undefined) => {
    if (!uid) return;
    if (TICKED.has(kind)) clusters.delete(uid);
    if (kind === 'BackupSchedule') schedules.delete(uid);
  };

  return {
    beginList,
    list: (kind: string, objs: readonly KubeObj[]) => {
      const sink = beginList(kind);
      sink.page(objs);
      sink.end();
    },
    observe: (kind: string, phase: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObj) =>
      phase === 'DELETED' ? remove(kind, obj.metadata?.uid) : put(kind, obj),
    /** For tests: run the schedule check now. */
    checkSchedules,
    stop: () => {
      clearInterval(healthTimer);
      clearInterval(scheduleTimer);
    },
  };
};
