import { createHash } from 'node:crypto';
import type { V1OwnerReference } from '@kubernetes/client-node';

/** Labels and annotations a scheduled Backup carries. */
export const SCHEDULE_LABEL = 'tideway.dev/schedule';
export const CLUSTER_LABEL = 'tideway.dev/cluster';
/** The run a Backup was made for (RFC 3339, UTC). */
export const SCHEDULED_TIME_ANNOTATION = 'tideway.dev/scheduled-time';
/** The schedule that made a Backup: its full name (a label value may be cut) and its uid. */
export const SCHEDULE_NAME_ANNOTATION = 'tideway.dev/schedule-name';
export const SCHEDULE_UID_ANNOTATION = 'tideway.dev/schedule-uid';

type Marked = {
  metadata?: { name?: string; annotations?: Record<string, string>; ownerReferences?: V1OwnerReference[] };
};

/**
 * The schedule a Backup was made by. Named in annotations and not by an owner reference, so that
 * deleting a schedule (a GitOps prune, a renamed manifest) leaves its Backups and their data in
 * place, as Velero and CloudNativePG do by default. Backups made before that carry a controller
 * owner reference, which is still read.
 */
export const madeBySchedule = (b: Marked | undefined): { name: string; uid: string } | undefined => {
  const a = b?.metadata?.annotations;
  const [name, uid] = [a?.[SCHEDULE_NAME_ANNOTATION], a?.[SCHEDULE_UID_ANNOTATION]];
  if (name && uid) return { name, uid };
  const owner = b?.metadata?.ownerReferences?.find(
    (r) => r.controller === true && r.kind === 'BackupSchedule',
  );
  return owner ? { name: owner.name, uid: owner.uid } : undefined;
};

/**
 * The Backup is the schedule's (with that uid: never one made by an earlier schedule of its name),
 * and, where it says for which run, named as the schedule names that run's Backup: a copy of one
 * (`kubectl get -o yaml`, renamed, created) carries the same annotations, and must not be pruned
 * or replaced as the schedule's.
 */
export const madeBy = (b: Marked | undefined, uid: string | undefined) => {
  const by = madeBySchedule(b);
  if (!uid || by?.uid !== uid) return false;
  const at = b?.metadata?.annotations?.[SCHEDULED_TIME_ANNOTATION];
  if (at === undefined) return true;
  const t = Date.parse(at);
  return !Number.isNaN(t) && b?.metadata?.name === backupName(by.name, new Date(t));
};

const hash = (text: string, n: number) => createHash('sha256').update(text).digest('hex').slice(0, n);

/** `name` cut to `max` characters, made unique again by a hash, never ending in `-` or `.`. */
const shorten = (name: string, max: number) =>
  name.length <= max ? name : `${name.slice(0, max - 11).replace(/[-.]+$/, '')}-${hash(name, 10)}`;

/**
 * A label value for an object name: names may have 253 characters, label values 63. Longer names
 * are cut and hashed, so the label still selects only that name's objects (the annotations decide
 * what is the schedule's anyway).
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

/**
 * The other Backup is of an earlier run than `mine` (both the schedule's, named by backupName):
 * their names end in the runs' UTC minutes. One named otherwise (made by an older version) counts
 * as earlier.
 */
export const isEarlierRun = (other: string, mine: string) => {
  const stamp = (n: string) => /-(\d{12})$/.exec(n)?.[1];
  const [o, m] = [stamp(other), stamp(mine)];
  return o === undefined || m === undefined || o < m;
};
