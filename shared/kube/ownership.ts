import { type KubeConfig, KubernetesObjectApi, type V1OwnerReference } from '@kubernetes/client-node';
import { isNotFound } from './errors.ts';

type Owned = { metadata?: { ownerReferences?: V1OwnerReference[] } };
type Named = { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } };

/** The reference names `uid` as the controller. */
export const isControllerRef = (uid: string | undefined) => (r: V1OwnerReference) =>
  !!uid && r.controller === true && r.uid === uid;

/** The object names `uid` as its controller. */
export const controlledBy = (obj: Owned | undefined, uid: string) =>
  (obj?.metadata?.ownerReferences ?? []).some(isControllerRef(uid));

/**
 * An object with the name Tideway wants exists and is not Tideway's (no controller reference to
 * the custom resource): Tideway must neither change it nor delete it later. Not retried: it takes
 * a person to rename the cluster or remove that object.
 */
export class OwnershipConflict extends Error {
  override readonly name = 'OwnershipConflict';
  readonly retry = false;
  readonly reason = 'OwnershipConflict';
}

/**
 * Throws OwnershipConflict when `obj` exists and is controlled by someone other than `ownerUid`;
 * returns the existing object (or undefined when there is none yet).
 */
export const assertOwnedOrAbsent = async <T extends Named>(
  kc: KubeConfig,
  obj: T,
  ownerUid: string,
): Promise<(T & Owned) | undefined> => {
  const api = KubernetesObjectApi.makeApiClient(kc);
  let existing: T & Owned;
  try {
    existing = (await api.read({
      apiVersion: obj.apiVersion ?? '',
      kind: obj.kind ?? '',
      metadata: { name: obj.metadata?.name ?? '', namespace: obj.metadata?.namespace ?? '' },
    })) as T & Owned;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  if (!controlledBy(existing, ownerUid)) {
    const owner = existing.metadata?.ownerReferences?.find((r) => r.controller);
    throw new OwnershipConflict(
      `${obj.kind} ${obj.metadata?.name} already exists and is not managed by this cluster${owner ? ` (its controller is ${owner.kind} ${owner.name})` : ''}; Tideway leaves it untouched. Rename the cluster, or delete that ${obj.kind} if it is not needed`,
    );
  }
  return existing;
};
