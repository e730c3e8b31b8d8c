import type { BackupScheduleSpec } from '../../shared/api/generated.ts';
import { recordsSchedule } from '../../shared/api/schedule.ts';
import { type Cron, nextFire, parseCron } from '../watcher/cron.ts';
import { dueFires } from '../watcher/ticks.ts';

/** A schedule's cron in its zone, or why there is none (the Ready condition's reason and message). */
export type ScheduleClock = {
  timeZone: string;
  /** The zone is one this server knows (retention buckets by it). */
  zoneKnown: boolean;
  cron?: Cron;
  problem?: { reason: 'InvalidSchedule' | 'InvalidTimeZone'; message: string };
};

/** The watcher's own cron (functions/watcher/cron.ts): ticks and status agree on every fire time. */
export const readClock = (spec: Pick<BackupScheduleSpec, 'schedule' | 'timeZone'>): ScheduleClock => {
  const timeZone = spec.timeZone || 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    return {
      timeZone,
      zoneKnown: false,
      problem: {
        reason: 'InvalidTimeZone',
        message: `spec.timeZone "${timeZone}" is not an IANA time zone this server knows; use one like Europe/Berlin or UTC`,
      },
    };
  }
  try {
    return { timeZone, zoneKnown: true, cron: parseCron(spec.schedule) };
  } catch (error) {
    return {
      timeZone,
      zoneKnown: true,
      problem: {
        reason: 'InvalidSchedule',
        message: `spec.schedule "${spec.schedule}": ${(error as Error).message}; use 5 fields (minute hour day-of-month month day-of-week, e.g. "0 3 * * *") or @hourly, @daily, @weekly, @monthly`,
      },
    };
  }
};

/** The first fire strictly after `after`, 'never', or undefined without a valid cron. */
export const fireAfter = (clock: ScheduleClock, after: Date) =>
  clock.cron ? nextFire(clock.cron, clock.timeZone, after) : undefined;

/** How many fires fall strictly between two instants (the clock's own bound: at most 10,000). */
export const firesBetween = (clock: ScheduleClock, after: Date, before: Date): number => {
  if (!clock.cron || before.getTime() - after.getTime() <= 1) return 0;
  const due = dueFires(clock.cron, clock.timeZone, after, new Date(before.getTime() - 1));
  return due ? due.missed + 1 : 0;
};

/**
 * Whether `at` is a fire of the schedule a status records (`status.schedule`) while the spec
 * says another: a run that was due under the schedule in force before a change.
 */
export const firedUnder = (
  recorded: { expression: string; timeZone: string } | undefined,
  spec: Pick<BackupScheduleSpec, 'schedule' | 'timeZone'>,
  at: Date,
): boolean => {
  if (!recorded || recordsSchedule(recorded, spec)) return false;
  const fire = fireAfter(
    readClock({ schedule: recorded.expression, timeZone: recorded.timeZone }),
    new Date(at.getTime() - 1),
  );
  return fire instanceof Date && fire.getTime() === at.getTime();
};
