import { parseDuration } from '../api/duration.ts';
import { MAX_AGE_MIN } from '../api/schedule.ts';

/** A BackupSchedule's spec.retention, as the API has it. */
export type RetentionPolicy = {
  keepLast?: number | undefined;
  keepHourly?: number | undefined;
  keepDaily?: number | undefined;
  keepWeekly?: number | undefined;
  keepMonthly?: number | undefined;
  /** A CRD duration (`90d`, `26h`): older backups are deleted, whatever keeps them otherwise. */
  maxAge?: string | undefined;
};

export type BackupPhase = 'Pending' | 'Running' | 'Completed' | 'Failed';

/** One Backup of the schedule, as retention sees it. */
export type RetentionCandidate = {
  name: string;
  /** undefined: nobody has started it yet (Pending). */
  phase: BackupPhase | undefined;
  /** When its data was taken: the age and the hour, day, week and month it counts for. */
  takenAt: Date;
};

/** Why a backup goes. */
export const PruneReason = {
  /** Older than maxAge. */
  maxAge: 'MaxAge',
  /** Completed, and no keep rule keeps it. */
  notKept: 'NotKept',
  /** Failed, and newer failures are kept as the record of what went wrong. */
  failedBeyondBound: 'FailedBeyondBound',
} as const;
export type PruneReason = (typeof PruneReason)[keyof typeof PruneReason];

/** What keeps a Completed backup: a rule's name, or `newest`. */
export type KeepReason = 'newest' | 'keepLast' | 'keepHourly' | 'keepDaily' | 'keepWeekly' | 'keepMonthly';

export type RetentionDecision = {
  /** Completed backups kept, newest first, each with every rule that keeps it. */
  keep: { name: string; reasons: KeepReason[] }[];
  /** Backups to delete: the Completed ones newest first, then the Failed ones newest first. */
  delete: { name: string; reason: PruneReason }[];
};

/**
 * Failed backups kept per schedule, newest first: a record of what went wrong, while a schedule
 * that fails every minute does not pile up thousands of them. A Failed backup holds no data (the
 * backup function aborts the upload), so deleting one loses nothing but its record.
 */
export const FAILED_KEPT = 3;

type Unit = 'hour' | 'day' | 'week' | 'month';
const PERIOD_RULES = [
  ['keepHourly', 'hour'],
  ['keepDaily', 'day'],
  ['keepWeekly', 'week'],
  ['keepMonthly', 'month'],
] as const satisfies readonly (readonly [KeepReason, Unit])[];

const formats = new Map<string, Intl.DateTimeFormat>();
const formatIn = (timeZone: string) => {
  let f = formats.get(timeZone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
      });
    } catch {
      throw new RangeError(`unknown time zone "${timeZone}"`);
    }
    formats.set(timeZone, f);
  }
  return f;
};

/**
 * The bucket of an instant in a time zone's wall clock: its local hour, day, ISO week (Monday to
 * Sunday, named by its Monday) or month. In autumn's repeated hour both instants share one hour.
 */
export const bucketOf = (t: Date, unit: Unit, timeZone: string): string => {
  const p = Object.fromEntries(
    formatIn(timeZone)
      .formatToParts(t)
      .map((x) => [x.type, Number(x.value)]),
  );
  const [y, m, d, h] = [p.year ?? 0, p.month ?? 0, p.day ?? 0, p.hour ?? 0];
  if (unit === 'month') return `${y}-${m}`;
  if (unit === 'day') return `${y}-${m}-${d}`;
  if (unit === 'hour') return `${y}-${m}-${d}T${h}`;
  const local = new Date(Date.UTC(y, m - 1, d));
  const sinceMonday = (local.getUTCDay() + 6) % 7;
  local.setUTCDate(local.getUTCDate() - sinceMonday);
  return `W${local.toISOString().slice(0, 10)}`;
};

const newestFirst = (a: RetentionCandidate, b: RetentionCandidate) =>
  b.takenAt.getTime() - a.takenAt.getTime() || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0);

/**
 * Which of one schedule's backups retention deletes (restic's `forget` rules, each counted on
 * its own; a backup any rule keeps stays):
 * - keepLast n: the n newest Completed.
 * - keepHourly/Daily/Weekly/Monthly n: the newest Completed of each of the n newest hours, days,
 *   ISO weeks or months (in `timeZone`'s wall clock) that have one.
 * - With no keep rule above 0, count rules keep everything; maxAge alone still prunes.
 * - maxAge: a backup taken longer ago is deleted, even if a rule keeps it.
 * - The newest Completed backup is never deleted, whatever the rules say.
 * - Pending and Running backups (and those not started) are never deleted.
 * - Failed: the newest `failedKept` stay (older than maxAge, they go too), the rest are deleted.
 */
export const selectRetention = (
  backups: readonly RetentionCandidate[],
  policy: RetentionPolicy | undefined,
  o: { now: Date; timeZone: string; failedKept?: number },
): RetentionDecision => {
  formatIn(o.timeZone); // an unknown zone fails here, whatever the backups
  const maxAgeMs = policy?.maxAge ? parseDuration(policy.maxAge) : undefined;
  // Admission refuses it (crds/, MAX_AGE_MIN); an object admitted before that rule is refused
  // here: below a minute is a slip ("0s"), and would delete every backup but the newest.
  if (maxAgeMs !== undefined && maxAgeMs < parseDuration(MAX_AGE_MIN))
    throw new RangeError(`maxAge ${policy?.maxAge} is shorter than ${MAX_AGE_MIN}`);
  const expired = (b: RetentionCandidate) =>
    maxAgeMs !== undefined && o.now.getTime() - b.takenAt.getTime() > maxAgeMs;

  const completed = backups.filter((b) => b.phase === 'Completed').sort(newestFirst);
  const kept = new Map<string, KeepReason[]>(completed.map((b) => [b.name, []]));
  const keepFor = (b: RetentionCandidate, why: KeepReason) => kept.get(b.name)?.push(why);

  const counted = (policy?.keepLast ?? 0) > 0 || PERIOD_RULES.some(([rule]) => (policy?.[rule] ?? 0) > 0);
  for (const b of completed.slice(0, policy?.keepLast ?? 0)) keepFor(b, 'keepLast');
  for (const [rule, unit] of PERIOD_RULES) {
    let left = policy?.[rule] ?? 0;
    let previous: string | undefined;
    for (const b of completed) {
      if (left <= 0) break;
      const bucket = bucketOf(b.takenAt, unit, o.timeZone);
      if (bucket === previous) continue; // newest first: the first of a bucket is its newest
      previous = bucket;
      keepFor(b, rule);
      left--;
    }
  }

  const newest = completed[0];
  if (newest) keepFor(newest, 'newest');
  const remove: RetentionDecision['delete'] = [];
  const keep: RetentionDecision['keep'] = [];
  for (const b of completed) {
    const reasons = kept.get(b.name) ?? [];
    if (b === newest) keep.push({ name: b.name, reasons });
    else if (expired(b)) remove.push({ name: b.name, reason: PruneReason.maxAge });
    else if (counted && reasons.length === 0) remove.push({ name: b.name, reason: PruneReason.notKept });
    else keep.push({ name: b.name, reasons });
  }

  const failed = backups.filter((b) => b.phase === 'Failed').sort(newestFirst);
  failed.forEach((b, i) => {
    if (expired(b)) remove.push({ name: b.name, reason: PruneReason.maxAge });
    else if (i >= (o.failedKept ?? FAILED_KEPT))
      remove.push({ name: b.name, reason: PruneReason.failedBeyondBound });
  });
  return { keep, delete: remove };
};
