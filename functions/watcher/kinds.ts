import { createHash } from 'node:crypto';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import type { KubeObject } from '../../shared/kube/status.ts';

/** What the watcher lists and watches, and which object an event is about. */
export type Watched = {
  kind: string;
  /** API path of the cluster-wide collection. */
  path: string;
  plural: string;
  labelSelector?: string;
  /** The object events are about: itself, or (pods) the RedisCluster they belong to. */
  about: (o: KubeObj) => { kind: string; namespace: string; name: string } | undefined;
  /**
   * What makes a change worth announcing; a change that keeps it (a status write) is not
   * published, so a function writing status does not trigger itself (GenerationChangedPredicate,
   * plus metadata). Without it every change is announced (owned objects: a pod's status matters).
   */
  fingerprint?: (o: KubeObj) => string;
};

export type KubeObj = KubeObject;

const specAndMeta = (o: KubeObj) => {
  const m = o.metadata as Record<string, unknown> | undefined;
  return createHash('sha256')
    .update(
      JSON.stringify([m?.generation, m?.labels, m?.annotations, m?.finalizers, m?.deletionTimestamp ?? null]),
    )
    .digest('base64url')
    .slice(0, 16);
};

const self =
  (kind: string) =>
  (o: KubeObj): { kind: string; namespace: string; name: string } | undefined =>
    o.metadata?.name && o.metadata.namespace
      ? { kind, namespace: o.metadata.namespace, name: o.metadata.name }
      : undefined;

export const MANAGED_BY = 'app.kubernetes.io/managed-by';
export const INSTANCE = 'app.kubernetes.io/instance';

const owned = (kind: string, prefix: string, plural: string): Watched => ({
  kind,
  plural,
  path: `${prefix}/${plural}`,
  labelSelector: `${MANAGED_BY}=tideway`,
  about: (o) => {
    const cluster = o.metadata?.labels?.[INSTANCE];
    return cluster && o.metadata?.namespace
      ? { kind: 'RedisCluster', namespace: o.metadata.namespace, name: cluster }
      : undefined;
  },
});

export const WATCHED: readonly Watched[] = [
  ...Object.values(TIDEWAY_KINDS).map((t) => ({
    kind: t.kind,
    plural: t.plural,
    path: `/apis/${t.group}/${t.version}/${t.plural}`,
    about: self(t.kind),
    fingerprint: specAndMeta,
  })),
  // What Tideway makes for its clusters: a change (or a delete: drift) of one is a change of its
  // cluster (controller-runtime's Owns). Selected by label, so nothing else is listed.
  owned('Pod', '/api/v1', 'pods'),
  owned('StatefulSet', '/apis/apps/v1', 'statefulsets'),
  owned('Service', '/api/v1', 'services'),
  owned('ConfigMap', '/api/v1', 'configmaps'),
  owned('PodDisruptionBudget', '/apis/policy/v1', 'poddisruptionbudgets'),
];

/** The same kinds in one namespace only (TIDEWAY_WATCH_NAMESPACE), like controller-runtime's cache scoping. */
export const inNamespace = (watched: readonly Watched[], namespace: string): Watched[] =>
  watched.map((w) => ({
    ...w,
    path: w.path.replace(new RegExp(`/${w.plural}$`), `/namespaces/${namespace}/${w.plural}`),
  }));
