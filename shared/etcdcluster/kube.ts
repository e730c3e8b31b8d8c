import type { KubeConfig, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { CoreV1Api } from '@kubernetes/client-node';
import { isAlreadyExists, isNotFound } from '../kube/errors.ts';
import { controlledBy } from '../kube/ownership.ts';
import { type Cluster, namesOf, OWNER_UID, selectorLabels } from './names.ts';

const selector = (c: Cluster) =>
  Object.entries(selectorLabels(c.metadata.name ?? ''))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

/**
 * The cluster's member pods: labelled as its own AND controlled by it. A pod someone else made
 * with our labels is neither counted nor touched.
 */
export const listMemberPods = async (kc: KubeConfig, c: Cluster): Promise<V1Pod[]> =>
  (
    await kc
      .makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace: namesOf(c).namespace, labelSelector: selector(c) })
  ).items.filter((p) => controlledBy(p, c.metadata.uid ?? ''));

/**
 * The members' volumes — labelled as ours and made for this very cluster (its uid) — and the
 * names of those labelled as ours but made for another (an earlier cluster of the same name):
 * never used, never deleted.
 */
export const listMemberVolumes = async (
  kc: KubeConfig,
  c: Cluster,
): Promise<{ ours: V1PersistentVolumeClaim[]; foreign: V1PersistentVolumeClaim[] }> => {
  const all = (
    await kc
      .makeApiClient(CoreV1Api)
      .listNamespacedPersistentVolumeClaim({ namespace: namesOf(c).namespace, labelSelector: selector(c) })
  ).items;
  const mine = (v: V1PersistentVolumeClaim) =>
    !!c.metadata.uid && v.metadata?.annotations?.[OWNER_UID] === c.metadata.uid;
  return { ours: all.filter(mine), foreign: all.filter((v) => !mine(v)) };
};

/** Creates it unless it exists (a run that stopped after creating it). */
export const createIfAbsent = async <T>(create: () => Promise<T>): Promise<void> => {
  try {
    await create();
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
};

/** Deletes exactly that object (uid precondition): a namesake made meanwhile survives. */
export const deleteExactly = async (remove: () => Promise<unknown>): Promise<void> => {
  try {
    await remove();
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
};
