import type { KubeConfig, V1ConfigMap, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { RedisCluster } from '../api/generated.ts';
import { type Applyable, serverSideApply } from '../kube/apply.ts';
import { applyOrRefuse, type Refusal, Refused } from '../kube/apply-owned.ts';
import { assertOwnedOrAbsent, OwnershipConflict } from '../kube/ownership.ts';
import {
  authConfSecretFor,
  configFor,
  configKeysInUse,
  configMapFor,
  pdbFor,
  renderedConfig,
  servicesFor,
  statefulSetFor,
} from './desired.ts';
import { FIELD_MANAGER, namesOf } from './names.ts';
import { ConfigRejected } from './redis-conf.ts';

export type { Refusal } from '../kube/apply-owned.ts';

/**
 * Makes the objects a cluster owns match its spec, by server-side apply — but only objects that
 * are absent or already this cluster's (controller reference): one of the same name that belongs
 * to someone else is never taken over. The StatefulSet comes last, so no pod starts for a cluster
 * whose Services or configuration the API server refuses. The API server's own message is
 * returned at the first refusal, instead of a silent retry.
 */
export const applyOwned = async (o: {
  kube: KubeConfig;
  rc: RedisCluster;
  /** What the auth-conf Secret records: the password every instance accepts, and the one before. */
  auth: { password: string; previous?: string };
  /** The cluster's pods now: the configuration each one reads is kept for it. */
  pods: readonly V1Pod[];
  /** How many pods, given the StatefulSet's replicas now (undefined before it exists). */
  stsReplicas: (current: number | undefined) => number;
  /**
   * Runs before the StatefulSet is given fewer replicas than it has (its uid, the new count);
   * false keeps the count it has.
   */
  beforeScaleDown?: (statefulSetUid: string, replicas: number) => Promise<boolean>;
  fence: () => void;
}): Promise<{ sts: V1StatefulSet } | Refusal> => {
  const { rc } = o;
  const uid = rc.metadata.uid ?? '';
  const n = namesOf(rc);
  const apply = serverSideApply(o.kube, FIELD_MANAGER);
  const named = <T extends Applyable>(apiVersion: string, kind: string, name: string) =>
    ({ apiVersion, kind, metadata: { name, namespace: n.namespace } }) as T;
  try {
    renderedConfig(rc); // refuses a bad spec.config before anything is read
    const others: Applyable[] = [authConfSecretFor(rc, o.auth), ...servicesFor(rc), pdbFor(rc)];
    // Every name is checked before anything is written: a conflict changes nothing at all.
    const existingConfig = await assertOwnedOrAbsent(
      o.kube,
      named<V1ConfigMap>('v1', 'ConfigMap', n.configMap),
      uid,
    );
    for (const obj of others) await assertOwnedOrAbsent(o.kube, obj, uid);
    const existingSts = await assertOwnedOrAbsent(
      o.kube,
      named<V1StatefulSet>('apps/v1', 'StatefulSet', n.statefulSet),
      uid,
    );
    const inUse = configKeysInUse(n.configMap, [
      ...o.pods.map((p) => p.spec),
      existingSts?.spec?.template?.spec,
    ]);
    const now = existingSts?.spec?.replicas;
    let replicas = o.stsReplicas(now);
    if (existingSts && now !== undefined && replicas < now && o.beforeScaleDown)
      if (!(await o.beforeScaleDown(existingSts.metadata?.uid ?? '', replicas))) replicas = now;
    const [mounted, ...more] = configKeysInUse(n.configMap, [existingSts?.spec?.template?.spec]);
    const config = {
      existing: existingConfig?.data ?? {},
      inUse,
      replicas,
      ...(mounted !== undefined && more.length === 0 ? { mounted } : {}),
    };
    const configMap = configMapFor(rc, config);
    for (const obj of [configMap, ...others]) {
      o.fence();
      await applyOrRefuse(apply, obj);
    }
    const sts = statefulSetFor(rc, configFor(rc, config).key, replicas);
    o.fence();
    return { sts: await applyOrRefuse(apply, sts) };
  } catch (error) {
    if (error instanceof ConfigRejected || error instanceof OwnershipConflict)
      return { reason: error.reason, message: error.message };
    if (error instanceof Refused) return { reason: 'Rejected', message: error.message };
    throw error;
  }
};
