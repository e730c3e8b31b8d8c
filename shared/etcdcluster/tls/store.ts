import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import type { EtcdCluster } from '../../api/generated.ts';
import { isAlreadyExists, isNotFound } from '../../kube/errors.ts';
import { controlledBy } from '../../kube/ownership.ts';
import { ownerRef } from '../desired.ts';
import { namesOf, selectorLabels } from '../names.ts';

/** A Secret as the TLS code sees it: decoded data, and whether this cluster controls it. */
export type StoredSecret = {
  data: Record<string, string>;
  ours: boolean;
  resourceVersion: string;
};

export type SecretType = 'Opaque' | 'kubernetes.io/tls';

/** The Secrets of one cluster's namespace: the one outside system ensureTls talks to. */
export type SecretStore = {
  get(name: string): Promise<StoredSecret | undefined>;
  /** Creates a Secret this cluster controls; false when one of that name appeared meanwhile. */
  create(name: string, type: SecretType, data: Record<string, string>): Promise<boolean>;
  /** Compare-and-set on resourceVersion: throws on a conflict (someone changed it meanwhile). */
  replace(
    name: string,
    resourceVersion: string,
    type: SecretType,
    data: Record<string, string>,
  ): Promise<void>;
};

type Cluster = Pick<EtcdCluster, 'apiVersion' | 'kind' | 'metadata' | 'spec'>;

const encode = (data: Record<string, string>) =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));

/** The cluster's namespace through the API server. Every write is fenced by the caller's lease. */
export const kubeSecretStore = (kc: KubeConfig, c: Cluster, fence: () => void): SecretStore => {
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = namesOf(c).namespace;
  const body = (name: string, type: SecretType, data: Record<string, string>, resourceVersion?: string) =>
    ({
      apiVersion: 'v1',
      kind: 'Secret',
      type,
      metadata: {
        name,
        namespace,
        labels: { ...selectorLabels(namesOf(c).name), 'app.kubernetes.io/component': 'tls' },
        ownerReferences: [ownerRef(c)],
        ...(resourceVersion ? { resourceVersion } : {}),
      },
      data: encode(data),
    }) satisfies V1Secret;
  return {
    get: async (name) => {
      try {
        const s = await core.readNamespacedSecret({ namespace, name });
        return {
          data: Object.fromEntries(
            Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
          ),
          ours: controlledBy(s, c.metadata.uid ?? ''),
          resourceVersion: s.metadata?.resourceVersion ?? '',
        };
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    create: async (name, type, data) => {
      fence();
      try {
        await core.createNamespacedSecret({ namespace, body: body(name, type, data) });
        return true;
      } catch (error) {
        if (isAlreadyExists(error)) return false;
        throw error;
      }
    },
    replace: async (name, resourceVersion, type, data) => {
      fence();
      await core.replaceNamespacedSecret({ namespace, name, body: body(name, type, data, resourceVersion) });
    },
  };
};
