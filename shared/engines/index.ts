import { etcdEngine } from './etcd.ts';
import { redisEngine } from './redis.ts';
import type { Engine, OwnedKind } from './types.ts';

export type { Engine, OwnedKind } from './types.ts';
export { collectionPath, ENGINE_LABEL, MANAGED_BY_TIDEWAY } from './types.ts';

/** Every engine Tideway runs. Adding one is adding it here (docs/engines.md). */
export const ENGINES: readonly Engine[] = [redisEngine, etcdEngine];

/**
 * The kind a Backup's or Restore's `spec.cluster` names when it names none: the API had one
 * engine first, and objects written then stay valid.
 */
export const DEFAULT_CLUSTER_KIND = redisEngine.cluster.kind;

/** The engine whose objects carry `app.kubernetes.io/name: <label>`. */
export const engineByLabel = (label: string | undefined): Engine | undefined =>
  ENGINES.find((e) => e.label === label);

/** The kinds engines make, each once (several engines make Pods). */
export const ownedKinds = (engines: readonly Engine[] = ENGINES): OwnedKind[] => {
  const byKey = new Map<string, OwnedKind>();
  for (const e of engines) for (const k of e.owned) byKey.set(`${k.group}/${k.kind}`, k);
  return [...byKey.values()];
};
