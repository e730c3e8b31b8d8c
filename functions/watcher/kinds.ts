import { createHash } from 'node:crypto';
import {
  collectionPath,
  ENGINE_LABEL,
  engineByLabel,
  MANAGED_BY_TIDEWAY,
  type OwnedKind,
  ownedKinds,
} from '../../shared/engines/index.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import type { KubeObject } from '../../shared/kube/status.ts';

/** What the watcher lists and watches, and which object an event is about. */
export type Watched = {
  kind: string;
  /** API path of the cluster-wide collection. */
  path: string;
  plural: string;
  labelSelector?: string;
  /** The object events are about: itself, or (what an engine made) the cluster it belongs to. */
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

export const MANAGED_BY = ENGINE_LABEL.managedBy;
export const INSTANCE = ENGINE_LABEL.instance;

/**
 * An engine's owned kind, selected by label. The object is about the cluster its labels name, of
 * the engine its `app.kubernetes.io/name` names: a Redis and an etcd cluster may share a name.
 * An object with our managed-by label and no engine's name is nobody's: it is not announced.
 */
const owned = (k: OwnedKind): Watched => ({
  kind: k.kind,
  plural: k.plural,
  path: collectionPath(k),
  labelSelector: `${MANAGED_BY}=${MANAGED_BY_TIDEWAY}`,
  about: (o) => {
    const labels = o.metadata?.labels;
    const engine = engineByLabel(labels?.[ENGINE_LABEL.name]);
    const cluster = labels?.[INSTANCE];
    // Only what that engine makes: a Redis PVC (a StatefulSet's) is no change of its cluster.
    return engine?.owned.some((e) => e.kind === k.kind) && cluster && o.metadata?.namespace
      ? { kind: engine.cluster.kind, namespace: o.metadata.namespace, name: cluster }
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
  // What the engines make for their clusters: a change (or a delete: drift) of one is a change of
  // its cluster (controller-runtime's Owns). Selected by label, so nothing else is listed.
  ...ownedKinds().map(owned),
];

/** The same kinds in one namespace only (TIDEWAY_WATCH_NAMESPACE), like controller-runtime's cache scoping. */
export const inNamespace = (watched: readonly Watched[], namespace: string): Watched[] =>
  watched.map((w) => ({
    ...w,
    path: w.path.replace(new RegExp(`/${w.plural}$`), `/namespaces/${namespace}/${w.plural}`),
  }));
