import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import {
  type Backup,
  type RedisCluster,
  type Restore,
  zBackup,
  zRedisCluster,
  zRestore,
} from '../../shared/api/generated.ts';
import { isConflict, isNotFound } from '../../shared/kube/errors.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { updateStatus } from '../../shared/kube/status.ts';
import { done, type HandlerContext, type Outcome, terminal } from '../../shared/runtime/handler.ts';
import { type RestoreState, STATE_ANNOTATION, serializeState, stateOf } from './state.ts';

const RESTORE = TIDEWAY_KINDS.Restore;
const BACKUP = TIDEWAY_KINDS.Backup;
const RDC = TIDEWAY_KINDS.RedisCluster;

export type RestoreStatus = NonNullable<Restore['status']>;
export type ClusterStatus = NonNullable<RedisCluster['status']>;

export type LoadedRestore = {
  restore: Restore;
  key: { namespace: string; name: string };
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid: string };
  state: RestoreState;
  /** Read-modify-write of the status; `mutate` sees the freshest and returns the next, or undefined. */
  writeStatus: (mutate: (s: RestoreStatus) => RestoreStatus | undefined) => Promise<void>;
  /** Replaces the state (annotation), on this very object (uid precondition). */
  writeState: (next: RestoreState) => Promise<void>;
};

const problems = (issues: readonly { path: PropertyKey[]; message: string }[]) =>
  issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`).join('; ');

/** Reads an object of a Tideway kind; undefined when there is none. */
const readObject = async (
  kube: KubeConfig,
  type: typeof RESTORE | typeof BACKUP | typeof RDC,
  namespace: string,
  name: string,
) => {
  try {
    return (await kube
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...type, namespace, name })) as unknown;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
};

/**
 * The Restore an event is about, freshly read and validated, or the outcome when there is none to
 * act on (gone: undefined, for the caller to look at the deleted object; not valid: terminal).
 */
export const loadRestore = async (
  event: CloudEvent<unknown>,
  ctx: HandlerContext,
): Promise<LoadedRestore | Outcome | undefined> => {
  const e = event as unknown as Record<string, string | undefined>;
  if (e.kind !== 'Restore' || !e.namespace || !e.name) return done;
  const key = { namespace: e.namespace, name: e.name };
  const raw = await readObject(ctx.kube, RESTORE, key.namespace, key.name);
  if (raw === undefined) return undefined;
  const parsed = zRestore.safeParse(raw);
  if (!parsed.success) return terminal('InvalidSpec', problems(parsed.error.issues));
  const restore = parsed.data;
  const custom = ctx.kube.makeApiClient(CustomObjectsApi);
  const uid = restore.metadata.uid ?? '';
  const loaded: LoadedRestore = {
    restore,
    key,
    regarding: { apiVersion: restore.apiVersion, kind: restore.kind, ...key, uid },
    state: stateOf(restore.metadata.annotations),
    writeStatus: async (mutate) => {
      const written = await updateStatus<Restore>(custom, RESTORE, key, (o) => {
        // Never write over a newer incarnation of the name.
        if (o.metadata.uid !== uid) return undefined;
        const next = mutate({ ...(o.status ?? {}) });
        return next === undefined || JSON.stringify(next) === JSON.stringify(o.status ?? {})
          ? undefined
          : next;
      });
      // Later steps of the run read what is there now.
      if (written?.metadata?.uid === uid)
        loaded.restore = { ...loaded.restore, status: written.status ?? {} };
    },
    writeState: async (next) => {
      ctx.fence();
      await custom.patchNamespacedCustomObject(
        {
          ...RESTORE,
          ...key,
          // The uid makes the patch fail on another object of the same name.
          body: { metadata: { uid, annotations: { [STATE_ANNOTATION]: serializeState(next) } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      loaded.state = next;
    },
  };
  return loaded;
};

export const isRestoreOutcome = (x: LoadedRestore | Outcome): x is Outcome => !('restore' in x);

export const readCluster = async (kube: KubeConfig, namespace: string, name: string) => {
  const raw = await readObject(kube, RDC, namespace, name);
  return raw === undefined ? undefined : zRedisCluster.parse(raw);
};

/** A Backup, or undefined when there is none (or it is not a valid Backup). */
export const readBackup = async (kube: KubeConfig, namespace: string, name: string) => {
  const raw = await readObject(kube, BACKUP, namespace, name);
  return raw === undefined ? undefined : zBackup.safeParse(raw).data;
};

const listOf = async (kube: KubeConfig, type: typeof RESTORE | typeof BACKUP, namespace: string) =>
  (
    (await kube.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ ...type, namespace })) as {
      items?: unknown[];
    }
  ).items ?? [];

export const listBackups = async (kube: KubeConfig, namespace: string): Promise<Backup[]> =>
  (await listOf(kube, BACKUP, namespace)).flatMap((o) => {
    const b = zBackup.safeParse(o);
    return b.success ? [b.data] : [];
  });

export const listRestores = async (kube: KubeConfig, namespace: string): Promise<Restore[]> =>
  (await listOf(kube, RESTORE, namespace)).flatMap((o) => {
    const r = zRestore.safeParse(o);
    return r.success ? [r.data] : [];
  });

/** Creates a Backup; false when one of that name exists already. */
export const createBackup = async (kube: KubeConfig, namespace: string, body: Record<string, unknown>) => {
  try {
    await kube.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ ...BACKUP, namespace, body });
    return true;
  } catch (error) {
    if (isConflict(error)) return false;
    throw error;
  }
};

/**
 * Read-modify-write of a RedisCluster's status, on the cluster with that uid only. `mutate`
 * must leave status.master alone (the record of who is master belongs to reconcile and health).
 */
export const writeClusterStatus = async (
  kube: KubeConfig,
  rc: RedisCluster,
  mutate: (s: ClusterStatus) => ClusterStatus | undefined,
) => {
  const key = { namespace: rc.metadata.namespace ?? '', name: rc.metadata.name };
  return updateStatus<RedisCluster>(kube.makeApiClient(CustomObjectsApi), RDC, key, (o) => {
    if (o.metadata.uid !== rc.metadata.uid) return undefined;
    const before = o.status ?? {};
    const next = mutate({ ...before });
    if (next === undefined || JSON.stringify(next) === JSON.stringify(before)) return undefined;
    return { ...next, master: before.master };
  });
};
