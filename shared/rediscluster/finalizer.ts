import {
  AppsV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { RedisCluster } from '../api/generated.ts';
import { isNotFound } from '../kube/errors.ts';
import { controlledBy } from '../kube/ownership.ts';
import { TIDEWAY_KINDS } from '../kube/resources.ts';
import { listPods } from './kube.ts';
import { FINALIZER, namesOf } from './names.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const setFinalizers = (kc: KubeConfig, rc: RedisCluster, finalizers: string[]) =>
  kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
    {
      ...RDC,
      namespace: rc.metadata.namespace ?? '',
      name: rc.metadata.name ?? '',
      // resourceVersion makes the patch conditional: a concurrent change is a 409, then a retry.
      body: { metadata: { finalizers, resourceVersion: rc.metadata.resourceVersion } },
    },
    mergePatch,
  );

export const hasFinalizer = (rc: RedisCluster) => (rc.metadata.finalizers ?? []).includes(FINALIZER);

export const addFinalizer = (kc: KubeConfig, rc: RedisCluster) =>
  setFinalizers(kc, rc, [...(rc.metadata.finalizers ?? []), FINALIZER]);

/**
 * Deletion: the StatefulSet goes first and the RedisCluster stays (phase Deleting) until its last
 * server process is gone, so "deleted" means nothing is still running. Only a StatefulSet this
 * cluster controls is deleted, and only that very object (uid precondition): one of the same name
 * that belongs to someone else survives the cluster. Services, ConfigMap and Secrets follow
 * through owner references. PVCs are kept (data is never deleted implicitly).
 * Returns true when the finalizer was removed.
 */
export const finalize = async (kc: KubeConfig, rc: RedisCluster): Promise<boolean> => {
  if (!hasFinalizer(rc)) return true;
  const n = namesOf(rc);
  const apps = kc.makeApiClient(AppsV1Api);
  const sts = await apps
    .readNamespacedStatefulSet({ namespace: n.namespace, name: n.statefulSet })
    .catch((error: unknown) => {
      if (isNotFound(error)) return undefined;
      throw error;
    });
  const ours = sts && controlledBy(sts, rc.metadata.uid ?? '');
  if (ours)
    await apps
      .deleteNamespacedStatefulSet({
        namespace: n.namespace,
        name: n.statefulSet,
        propagationPolicy: 'Background',
        body: { preconditions: { uid: sts.metadata?.uid ?? '' } },
      })
      .catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
  // Pods of a foreign StatefulSet by that name are not ours to wait for.
  const pods = (await listPods(kc, rc)).filter(
    (p) => ours || !sts || !p.metadata?.ownerReferences?.some((r) => r.uid === sts.metadata?.uid),
  );
  if (pods.length > 0) return false;
  await setFinalizers(
    kc,
    rc,
    (rc.metadata.finalizers ?? []).filter((f) => f !== FINALIZER),
  );
  return true;
};
