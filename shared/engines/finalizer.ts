import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { ResourceType } from '../kube/resources.ts';

/** Held by every cluster Tideway runs until what runs for it has stopped. */
export const FINALIZER = 'tideway.dev/cleanup';

type Meta = {
  metadata: { name?: string; namespace?: string; resourceVersion?: string; finalizers?: string[] };
};

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export const hasFinalizer = (o: Meta) => (o.metadata.finalizers ?? []).includes(FINALIZER);

const setFinalizers = (kc: KubeConfig, type: ResourceType, o: Meta, finalizers: string[]) =>
  kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
    {
      ...type,
      namespace: o.metadata.namespace ?? '',
      name: o.metadata.name ?? '',
      // resourceVersion makes the patch conditional: a concurrent change is a 409, then a retry.
      body: { metadata: { finalizers, resourceVersion: o.metadata.resourceVersion } },
    },
    mergePatch,
  );

export const addFinalizer = (kc: KubeConfig, type: ResourceType, o: Meta) =>
  setFinalizers(kc, type, o, [...(o.metadata.finalizers ?? []), FINALIZER]);

export const removeFinalizer = (kc: KubeConfig, type: ResourceType, o: Meta) =>
  setFinalizers(
    kc,
    type,
    o,
    (o.metadata.finalizers ?? []).filter((f) => f !== FINALIZER),
  );
