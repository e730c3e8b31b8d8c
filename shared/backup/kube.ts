import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { type Backup, type RedisCluster, zBackup, zRedisCluster } from '../api/generated.ts';
import { extension } from '../events/extension.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import { TIDEWAY_KINDS } from '../kube/resources.ts';
import { updateStatus } from '../kube/status.ts';
import { done, type HandlerContext, type Outcome, terminal } from '../runtime/handler.ts';

const BACKUP = TIDEWAY_KINDS.Backup;
const RDC = TIDEWAY_KINDS.RedisCluster;
export type BackupStatus = NonNullable<Backup['status']>;

/** Kept on a Backup until its stored object is deleted (or kept, with deletionPolicy Retain). */
export const BACKUP_FINALIZER = 'tideway.dev/backup-object';

export type LoadedBackup = {
  backup: Backup;
  key: { namespace: string; name: string };
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid: string };
  /**
   * Read-modify-write of the status; `mutate` sees the freshest (and the object it is of) and
   * returns the next, or undefined.
   */
  writeStatus: (
    mutate: (s: BackupStatus, current: Backup) => BackupStatus | undefined,
  ) => Promise<Backup | undefined>;
};

/**
 * The Backup an event is about, freshly read and validated, or the outcome when there is none to
 * act on (gone: done; not valid: terminal, with the problems).
 */
export const loadBackup = async (
  event: CloudEvent<unknown>,
  ctx: HandlerContext,
): Promise<LoadedBackup | Outcome> => {
  const [namespace, name] = [extension(event, 'namespace'), extension(event, 'name')];
  if (extension(event, 'kind') !== 'Backup' || !namespace || !name) return done;
  return loadBackupAt({ namespace, name }, ctx);
};

/** The Backup of that name, as `loadBackup` gives it; `done` when there is none. */
export const loadBackupAt = async (
  key: { namespace: string; name: string },
  ctx: HandlerContext,
): Promise<LoadedBackup | Outcome> => {
  const custom = ctx.kube.makeApiClient(CustomObjectsApi);
  let raw: unknown;
  try {
    raw = await custom.getNamespacedCustomObject({ ...BACKUP, ...key });
  } catch (error) {
    if (isNotFound(error)) return done;
    throw error;
  }
  const parsed = zBackup.safeParse(raw);
  if (!parsed.success)
    return terminal(
      'InvalidSpec',
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  const backup = parsed.data;
  return {
    backup,
    key,
    regarding: { apiVersion: backup.apiVersion, kind: backup.kind, ...key, uid: backup.metadata.uid ?? '' },
    writeStatus: (mutate) =>
      updateStatus<Backup>(custom, BACKUP, key, (o) => {
        // Never write over a newer incarnation of the name.
        if (o.metadata.uid !== backup.metadata.uid) return undefined;
        const next = mutate({ ...(o.status ?? {}) }, o);
        return next === undefined || JSON.stringify(next) === JSON.stringify(o.status ?? {})
          ? undefined
          : next;
      }),
  };
};

export const isBackupOutcome = (x: LoadedBackup | Outcome): x is Outcome => !('backup' in x);

/** The RedisCluster of that name, or undefined when there is none. */
export const readCluster = async (
  kube: KubeConfig,
  namespace: string,
  name: string,
): Promise<RedisCluster | undefined> => {
  try {
    return zRedisCluster.parse(
      await kube.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ ...RDC, namespace, name }),
    );
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
};

export const hasBackupFinalizer = (b: Backup) => (b.metadata.finalizers ?? []).includes(BACKUP_FINALIZER);

/**
 * Set on a deleted Backup right before its stored object is deleted: the decision, made by
 * resourceVersion, so that a deletionPolicy changed since the Backup was read makes it conflict
 * (and the next look reads the change). A later look that finds it and Retain keeps the object
 * if it is still there.
 */
export const DELETING_OBJECT_ANNOTATION = 'tideway.dev/deleting-object';

/** Records that decision; the Backup as it is now, or undefined when it changed since `b` was read. */
export const markDeletingObject = async (
  kube: KubeConfig,
  b: Backup,
  at: string,
): Promise<Backup | undefined> => {
  try {
    return (await kube.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
      {
        ...BACKUP,
        namespace: b.metadata.namespace ?? '',
        name: b.metadata.name,
        body: {
          metadata: {
            resourceVersion: b.metadata.resourceVersion,
            annotations: { [DELETING_OBJECT_ANNOTATION]: at },
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Backup;
  } catch (error) {
    if (isConflict(error)) return undefined;
    throw error;
  }
};

/** Sets the finalizers, conditional on the resourceVersion read (a concurrent change is a 409: retried). */
export const setBackupFinalizers = (kube: KubeConfig, b: Backup, finalizers: string[]) =>
  kube.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
    {
      ...BACKUP,
      namespace: b.metadata.namespace ?? '',
      name: b.metadata.name,
      body: { metadata: { finalizers, resourceVersion: b.metadata.resourceVersion } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  ) as Promise<unknown>;
