import type { CustomObjectsApi } from '@kubernetes/client-node';
import { isConflict } from './errors.ts';
import type { ObjectKey, ResourceType } from './resources.ts';

/** The parts of any Kubernetes object Tideway's generic code reads. */
export type KubeObject = {
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    labels?: Record<string, string>;
  };
  status?: Record<string, unknown>;
  [k: string]: unknown;
};

/**
 * Read-modify-write of the status subresource with optimistic concurrency: the write carries the
 * resourceVersion read, and a 409 (someone wrote in between) re-reads and re-applies `mutate`.
 * `mutate` returns the new status, or undefined to write nothing.
 */
export const updateStatus = async <T extends KubeObject>(
  api: CustomObjectsApi,
  type: ResourceType,
  key: ObjectKey,
  mutate: (obj: T) => Record<string, unknown> | undefined,
  attempts = 5,
): Promise<T | undefined> => {
  for (let i = 1; ; i++) {
    const obj = (await api.getNamespacedCustomObject({ ...type, ...key })) as T;
    const status = mutate(obj);
    if (status === undefined) return obj;
    try {
      return (await api.replaceNamespacedCustomObjectStatus({
        ...type,
        ...key,
        body: { ...obj, status },
      })) as T;
    } catch (error) {
      if (!isConflict(error) || i >= attempts) throw error;
    }
  }
};
