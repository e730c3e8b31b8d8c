import type { CelBlocks } from './cel-blocks.ts';
import { celDurationMs, parseDuration } from './duration.ts';

// The BackupSchedule crons the API server refuses because they never fire. With day-of-week `*`
// the day-of-month alone decides (with both restricted either matches, and a weekday occurs in
// every month); then a schedule never fires when its smallest day is 30 or 31 and its only month
// is February, or its smallest day is 31 and its months have 30 days or fewer. Said here for days
// given as numbers, ranges and steps and months as numbers or names, which a regular expression
// can tell; the watcher's clock (functions/watcher/cron.ts neverFires) recognises the rest.

const CRON_MINUTE_HOUR = '^[^ ]+ +[^ ]+ +';
const days = (first: string) => `${first}(-3[01])?(/[0-9]+)?(,${first}(-3[01])?(/[0-9]+)?)*`;
const months = (m: string) => ` +(${m})(,(${m}))* +\\*$`;

/** Regular expressions (RE2 and JavaScript alike) for a 5-field cron that never fires. */
export const NEVER_FIRING_CRON = [
  `${CRON_MINUTE_HOUR}${days('3[01]')}${months('0?2|(?i:feb)')}`,
  `${CRON_MINUTE_HOUR}${days('31')}${months('0?[2469]|11|(?i:feb|apr|jun|sep|nov)')}`,
] as const;

/** Month and weekday names as numbers, as the watcher's cron reads them (7 is Sunday too). */
const CRON_NAMES = Object.fromEntries([
  ...['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'].map((m, i) => [
    m,
    i + 1,
  ]),
  ...['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'].map((d, i) => [d, i]),
]);
const celNames = `{${Object.entries(CRON_NAMES)
  .map(([k, v]) => `'${k}': ${v}`)
  .join(', ')}}`;
/** A range end (a number or a name; the syntax rule has vouched for it) as a CEL int. */
const celCronValue = (x: string) =>
  `(${x}.matches('^[0-9]+$') ? int(${x}) : (${x}.lowerAscii() in ${celNames} ? ${celNames}[${x}.lowerAscii()] : 0))`;
const rangeOf = `p.split('/')[0]`;
/** CEL: no range of any field runs backwards ("5-1", "fri-mon"), which the watcher's cron refuses. */
const CRON_RANGES_FORWARD = `self.schedule.startsWith('@') || self.schedule.split(' ').all(f, f.split(',').all(p, !${rangeOf}.contains('-') || ${celCronValue(`${rangeOf}.split('-')[0]`)} <= ${celCronValue(`${rangeOf}.split('-')[1]`)}))`;

/**
 * The shortest startingDeadlineSeconds: ticks arrive a few seconds after their time (the watcher
 * checks each second, then the bus), so a shorter deadline skips runs — with 0, every run.
 */
export const STARTING_DEADLINE_MIN_SECONDS = 10;
/** The shortest retention maxAge: below a minute is a slip ("0s"), deleting all backups but one. */
export const MAX_AGE_MIN = '1m';

/** The generated blocks of crds/backupschedule.yaml, by marker name. */
export const BACKUPSCHEDULE_CEL = {
  startingDeadline: [
    {
      rule: `self >= ${STARTING_DEADLINE_MIN_SECONDS}`,
      message: `startingDeadlineSeconds must be at least ${STARTING_DEADLINE_MIN_SECONDS}: ticks arrive a few seconds after their time, and a shorter deadline skips runs`,
    },
  ],
  maxAge: [
    {
      rule: `${celDurationMs('self')} >= ${parseDuration(MAX_AGE_MIN)}.0`,
      message: `retention.maxAge must be at least ${MAX_AGE_MIN}: a shorter one deletes every backup but the newest at once`,
    },
  ],
  spec: [
    {
      rule: `!has(self.schedule) || ${NEVER_FIRING_CRON.map((re) => `!self.schedule.matches(r'${re}')`).join(' && ')}`,
      message:
        'schedule never fires: none of its months has its day of month (e.g. 30 February, 31 April); choose a day that exists in those months',
      fieldPath: '.schedule',
    },
    {
      rule: `!has(self.schedule) || ${CRON_RANGES_FORWARD}`,
      message:
        'schedule has a range that runs backwards (e.g. "5-1"): write it low to high, or as two ranges ("5-23,0-1")',
      fieldPath: '.schedule',
    },
  ],
} as const satisfies CelBlocks;

/**
 * Whether a BackupSchedule's `status.schedule` record is of the schedule its spec says now (the
 * cron and zone; no zone is UTC). One rule for the watcher and the schedule function.
 */
export const recordsSchedule = (
  record: { expression?: string | undefined; timeZone?: string | undefined } | undefined,
  spec: { schedule?: string | undefined; timeZone?: string | undefined },
): boolean =>
  record !== undefined && record.expression === spec.schedule && record.timeZone === (spec.timeZone || 'UTC');
