import { isDeepStrictEqual } from 'node:util';
import {
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1OwnerReference,
} from '@kubernetes/client-node';
import { type Backup, type BackupSchedule, zBackup, zBackupSchedule } from '../../shared/api/generated.ts';
import { type ClusterRef, clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import { isAlreadyExists, isConflict, isNotFound } from '../../shared/kube/errors.ts';
import { isControllerRef } from '../../shared/kube/ownership.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { updateStatus } from '../../shared/kube/status.ts';
import { rfc3339 } from '../../shared/kube/time.ts';
import { done, type Outcome, terminal } from '../../shared/runtime/handler.ts';
import {
  backupName,
  CLUSTER_LABEL,
  labelValue,
  madeBy,
  SCHEDULE_LABEL,
  SCHEDULE_NAME_ANNOTATION,
  SCHEDULE_UID_ANNOTATION,
  SCHEDULED_TIME_ANNOTATION,
} from './names.ts';

const BACKUP = TIDEWAY_KINDS.Backup;
const SCHEDULE = TIDEWAY_KINDS.BackupSchedule;
type Status = NonNullable<BackupSchedule['status']>;
type Key = { namespace: string; name: string };
type Marked = Parameters<typeof madeBy>[0];

export type LoadedSchedule = {
  schedule: BackupSchedule;
  key: Key;
  /** Read-modify-write of the status (compare-and-set on resourceVersion); undefined writes nothing. */
  writeStatus: (mutate: (s: Status) => Status | undefined) => Promise<BackupSchedule | undefined>;
  /**
   * The same, for a status derived from what `observe` sees (the schedule's Backups): it looks
   * after each read of the schedule, so a write based on an older look than the last writer's
   * loses the compare-and-set and looks again. Runs started by Backup events do not hold the
   * schedule's lock, and must not write back what they saw before a run made its Backup.
   * `observe` is given the schedule as just read; when it returns undefined nothing is written.
   */
  writeObserved: <T>(
    observe: (current: BackupSchedule) => Promise<T | undefined>,
    mutate: (s: Status, seen: T) => Status | undefined,
  ) => Promise<BackupSchedule>;
  /** The schedule's generation as the API server has it now; undefined once it is gone. */
  generationNow: () => Promise<number | undefined>;
};

/** By content, not key order: the API server returns keys sorted, a mutate adds them where it will. */
export const unchanged = (next: Status | undefined, current: Status | undefined) =>
  next === undefined ||
  isDeepStrictEqual(JSON.parse(JSON.stringify(next)), JSON.parse(JSON.stringify(current ?? {})));

/** The BackupSchedule, freshly read and validated, or the outcome when there is none to act on. */
export const loadSchedule = async (kube: KubeConfig, key: Key): Promise<LoadedSchedule | Outcome> => {
  const custom = kube.makeApiClient(CustomObjectsApi);
  let raw: unknown;
  try {
    raw = await custom.getNamespacedCustomObject({ ...SCHEDULE, ...key });
  } catch (error) {
    if (isNotFound(error)) return done; // gone: its Backups stay, pruned no more
    throw error;
  }
  const parsed = zBackupSchedule.safeParse(raw);
  if (!parsed.success)
    return terminal(
      'InvalidSpec',
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  return {
    schedule: parsed.data,
    key,
    writeStatus: (mutate) =>
      updateStatus<BackupSchedule>(custom, SCHEDULE, key, (o) => {
        const next = mutate({ ...(o.status ?? {}) });
        return unchanged(next, o.status) ? undefined : next;
      }),
    generationNow: async () => {
      try {
        return ((await custom.getNamespacedCustomObject({ ...SCHEDULE, ...key })) as BackupSchedule).metadata
          .generation;
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    writeObserved: async (observe, mutate) => {
      for (let attempt = 1; ; attempt++) {
        const o = (await custom.getNamespacedCustomObject({ ...SCHEDULE, ...key })) as BackupSchedule;
        const seen = await observe(o);
        if (seen === undefined) return o;
        const next = mutate({ ...(o.status ?? {}) }, seen);
        if (unchanged(next, o.status)) return o;
        try {
          return (await custom.replaceNamespacedCustomObjectStatus({
            ...SCHEDULE,
            ...key,
            body: { ...o, status: next },
          })) as BackupSchedule;
        } catch (error) {
          if (!isConflict(error) || attempt >= 5) throw error;
        }
      }
    },
  };
};

export const isLoaded = (x: LoadedSchedule | Outcome): x is LoadedSchedule => 'schedule' in x;

/**
 * The schedule's Backups: selected by label, and only those it made (a Backup someone else
 * made, labelled alike, is never counted, replaced or pruned: see madeBy).
 */
export const listScheduleBackups = async (kube: KubeConfig, s: BackupSchedule): Promise<Backup[]> => {
  const list = (await kube.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
    ...BACKUP,
    namespace: s.metadata.namespace ?? '',
    labelSelector: `${SCHEDULE_LABEL}=${labelValue(s.metadata.name)}`,
  })) as { items?: unknown[] };
  return (list.items ?? []).flatMap((item) => {
    const b = zBackup.safeParse(item);
    return b.success && madeBy(item as Marked, s.metadata.uid) ? [b.data] : [];
  });
};

/**
 * Backups made before schedules named themselves in annotations carry a controller owner
 * reference to the schedule instead, and the garbage collector would delete them with it. This
 * moves such a Backup to the annotations and drops that reference (by resourceVersion: one changed
 * meanwhile is moved at the next look). True when it moved it.
 */
export const releaseFromOwner = async (kube: KubeConfig, s: BackupSchedule, b: Backup): Promise<boolean> => {
  const refs = (b.metadata as { ownerReferences?: V1OwnerReference[] }).ownerReferences ?? [];
  const rest = refs.filter((r) => !isControllerRef(s.metadata.uid)(r));
  if (rest.length === refs.length) return false;
  try {
    await kube.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
      {
        ...BACKUP,
        namespace: b.metadata.namespace ?? s.metadata.namespace ?? '',
        name: b.metadata.name,
        body: {
          metadata: {
            resourceVersion: b.metadata.resourceVersion,
            annotations: {
              [SCHEDULE_NAME_ANNOTATION]: s.metadata.name,
              [SCHEDULE_UID_ANNOTATION]: s.metadata.uid,
            },
            ownerReferences: rest.length > 0 ? rest : null,
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    return true;
  } catch (error) {
    if (isConflict(error) || isNotFound(error)) return false;
    throw error;
  }
};

export const clusterExists = async (kube: KubeConfig, namespace: string, ref: ClusterRef) => {
  try {
    await kube
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...TIDEWAY_KINDS[ref.kind], namespace, name: ref.name });
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
};

/** The Backup of the run at `at`: the template, the cluster, marked as the schedule's (no owner reference). */
export const desiredBackup = (s: BackupSchedule, at: Date) => ({
  apiVersion: `${BACKUP.group}/${BACKUP.version}`,
  kind: BACKUP.kind,
  metadata: {
    name: backupName(s.metadata.name, at),
    namespace: s.metadata.namespace,
    labels: {
      [SCHEDULE_LABEL]: labelValue(s.metadata.name),
      [CLUSTER_LABEL]: labelValue(s.spec.cluster.name),
    },
    annotations: {
      [SCHEDULED_TIME_ANNOTATION]: rfc3339(at),
      [SCHEDULE_NAME_ANNOTATION]: s.metadata.name,
      [SCHEDULE_UID_ANNOTATION]: s.metadata.uid ?? '',
    },
  },
  spec: { ...(s.spec.template ?? {}), cluster: clusterRefOf(s.spec) },
});

/**
 * Creates the run's Backup. `exists` when it was there already and is the schedule's (made by an
 * earlier delivery of the same tick); `foreign` when that name belongs to someone else.
 */
export const createBackup = async (
  kube: KubeConfig,
  s: BackupSchedule,
  at: Date,
): Promise<'created' | 'exists' | 'foreign'> => {
  const custom = kube.makeApiClient(CustomObjectsApi);
  const body = desiredBackup(s, at);
  try {
    await custom.createNamespacedCustomObject({ ...BACKUP, namespace: body.metadata.namespace ?? '', body });
    return 'created';
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  const existing = await custom.getNamespacedCustomObject({
    ...BACKUP,
    namespace: body.metadata.namespace ?? '',
    name: body.metadata.name,
  });
  return madeBy(existing as Marked, s.metadata.uid) ? 'exists' : 'foreign';
};

/**
 * Deletes that very Backup (uid precondition): never one made anew under its name meanwhile.
 * False when it was gone already (another run deleted it first).
 */
export const deleteBackup = async (kube: KubeConfig, namespace: string, name: string, uid: string) => {
  try {
    await kube.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
      ...BACKUP,
      namespace,
      name,
      body: { preconditions: { uid } },
    });
    return true;
  } catch (error) {
    // Gone already, or replaced by another object of that name: either way not ours to delete.
    if (isNotFound(error) || isConflict(error)) return false;
    throw error;
  }
};

/**
 * Deletes that Backup only while it is unfinished (concurrencyPolicy Replace): by uid and by the
 * resourceVersion it was seen unfinished at, so one that completes between the look and the
 * delete is kept — it may be the newest Completed backup, which nothing deletes. `finished` when
 * it was kept for that, `gone` when it was gone already or is another object by now.
 */
export const deleteWhileUnfinished = async (
  kube: KubeConfig,
  namespace: string,
  name: string,
  uid: string,
): Promise<'deleted' | 'finished' | 'gone'> => {
  const custom = kube.makeApiClient(CustomObjectsApi);
  for (let attempt = 1; ; attempt++) {
    const b = await readBackup(kube, { namespace, name });
    if (!b || b.metadata.uid !== uid || b.metadata.deletionTimestamp) return 'gone';
    if (b.status?.phase === 'Completed' || b.status?.phase === 'Failed') return 'finished';
    try {
      await custom.deleteNamespacedCustomObject({
        ...BACKUP,
        namespace,
        name,
        body: { preconditions: { uid, resourceVersion: b.metadata.resourceVersion } },
      });
      return 'deleted';
    } catch (error) {
      if (isNotFound(error)) return 'gone';
      // Changed since the look (its progress, or its end): look again.
      if (!isConflict(error) || attempt >= 5) throw error;
    }
  }
};

/** A Backup the event names, if it still exists. */
export const readBackup = async (kube: KubeConfig, key: Key): Promise<Backup | undefined> => {
  try {
    const b = zBackup.safeParse(
      await kube.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ ...BACKUP, ...key }),
    );
    return b.success ? b.data : undefined;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
};
