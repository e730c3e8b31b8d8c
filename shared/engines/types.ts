import type { ResourceType } from '../kube/resources.ts';

/** Labels on everything an engine makes for a cluster: how an owned object finds its cluster. */
export const ENGINE_LABEL = {
  /** The engine's `label` (redis, etcd): two engines' clusters may share a name. */
  name: 'app.kubernetes.io/name',
  /** The cluster's name. */
  instance: 'app.kubernetes.io/instance',
  managedBy: 'app.kubernetes.io/managed-by',
} as const;

export const MANAGED_BY_TIDEWAY = 'tideway';

/** A Kubernetes kind an engine makes for its clusters; the watcher lists it by label. */
export type OwnedKind = {
  kind: string;
  /** '' for the core group. */
  group: string;
  version: string;
  plural: string;
};

/**
 * What the runtime knows of a data engine. The watcher, the installer and the runtime read this
 * and name no engine: the engine's own functions (serverless.yml) hold everything else.
 */
export type Engine = {
  /** `app.kubernetes.io/name` of everything the engine makes, with `instance` = the cluster. */
  label: string;
  /** The kind users declare clusters with. */
  cluster: ResourceType;
  /** What it makes for a cluster: a change (or deletion) of one is a change of its cluster. */
  owned: readonly OwnedKind[];
  /** The watcher sends a health tick per cluster every interval (the health function's clock). */
  healthTicks: boolean;
  /** Its functions in serverless.yml; each has its role file in infra/rbac. */
  functions: readonly string[];
};

/** The API path of an owned kind's cluster-wide collection. */
export const collectionPath = (k: OwnedKind) =>
  k.group === '' ? `/api/${k.version}/${k.plural}` : `/apis/${k.group}/${k.version}/${k.plural}`;
