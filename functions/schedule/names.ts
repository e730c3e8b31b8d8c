import { createHash } from 'node:crypto';

/** Labels and annotation a scheduled Backup carries. */
export const SCHEDULE_LABEL = 'tideway.dev/schedule';
export const CLUSTER_LABEL = 'tideway.dev/cluster';
/** The run a Backup was made for (RFC 3339, UTC). */
export const SCHEDULED_TIME_ANNOTATION = 'tideway.dev/scheduled-time';

const hash = (text: string, n: number) => createHash('sha256').update(text).digest('hex').slice(0, n);

/** `name` cut to `max` characters, made unique again by a hash, never ending in `-` or `.`. */
const shorten = (name: string, max: number) =>
  name.length <= max ? name : `${name.slice(0, max - 11).replace(/[-.]+$/, '')}-${hash(name, 10)}`;

/**
 * A label value for an object name: names may have 253 characters, label values 63. Longer names
 * are cut and hashed, so the label still selects only that name's objects (owner references
 * decide what is the schedule's anyway).
 */
export const labelValue = (name: string) => shorten(name, 63);

/** Minutes are a cron's resolution: `YYYYMMDDHHmm` in UTC, unique per run whatever the zone. */
const runStamp = (t: Date) => t.toISOString().slice(0, 16).replace(/[-T:]/g, '');

/**
 * The Backup of one run: the same schedule and scheduled time always give the same name, so a
 * tick delivered twice, or by two watchers, finds the Backup it made the first time. UTC, not the
 * schedule's zone: autumn's repeated local hour would give two runs one name.
 */
export const backupName = (schedule: string, scheduledTime: Date) =>
  `${shorten(schedule, 253 - 13)}-${runStamp(scheduledTime)}`;

/** RFC 3339 to the second, as Kubernetes writes times. */
export const rfc3339 = (t: Date) => t.toISOString().replace(/\.\d{3}Z$/, 'Z');
