import { type KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';

export type Applyable = {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
};

/**
 * Server-side apply under one field manager, forced: Tideway owns the fields it sets, so a drift
 * (someone edited them) is taken back, while fields others own (a status, an HPA's replicas, a
 * user's extra label) are left alone. Idempotent: applying the same object twice changes nothing.
 */
export const serverSideApply = (kc: KubeConfig, fieldManager: string) => {
  const api = KubernetesObjectApi.makeApiClient(kc);
  return async <T extends Applyable>(obj: T): Promise<T> =>
    (await api.patch(obj, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply)) as T;
};
