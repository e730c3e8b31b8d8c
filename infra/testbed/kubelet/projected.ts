import type {
  CoreV1Api,
  V1ConfigMap,
  V1Pod,
  V1ProjectedVolumeSource,
  V1Secret,
  V1ServiceAccountTokenProjection,
} from '@kubernetes/client-node';
import type { FileProjection, Payload } from './atomic-writer.ts';
import { ContainerConfigError } from './env.ts';
import { configMapPayload, downwardApiPayload, secretPayload } from './payload.ts';

/** Tokens a pod's projected volumes hold, by volume and path, and when to ask for new ones. */
export type TokenCache = Map<string, { readonly token: string; readonly renewAt: number }>;

const DEFAULT_MODE = 0o644;
const DEFAULT_EXPIRATION = 3600;

/**
 * kubelet renews a projected token when 80% of its lifetime has passed, or after 24 hours,
 * whichever comes first.
 */
export const renewAt = (issuedAt: number, expiresAt: number): number =>
  issuedAt + Math.min(0.8 * (expiresAt - issuedAt), 24 * 3600 * 1000);

const requestToken = async (
  core: CoreV1Api,
  pod: V1Pod,
  source: V1ServiceAccountTokenProjection,
): Promise<{ token: string; renewAt: number }> => {
  const namespace = pod.metadata?.namespace ?? 'default';
  const account = pod.spec?.serviceAccountName || 'default';
  const issuedAt = Date.now();
  try {
    const r = await core.createNamespacedServiceAccountToken({
      namespace,
      name: account,
      body: {
        spec: {
          audiences: source.audience ? [source.audience] : [],
          expirationSeconds: source.expirationSeconds ?? DEFAULT_EXPIRATION,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid },
        },
      },
    });
    const token = r.status?.token;
    if (!token) throw new Error('the API server returned no token');
    const expiresAt = r.status?.expirationTimestamp
      ? new Date(r.status.expirationTimestamp).getTime()
      : issuedAt + (source.expirationSeconds ?? DEFAULT_EXPIRATION) * 1000;
    return { token, renewAt: renewAt(issuedAt, expiresAt) };
  } catch (error) {
    throw new ContainerConfigError(
      `could not get a token for serviceaccount ${namespace}/${account}: ${(error as Error).message}`,
      { cause: error },
    );
  }
};

/** How a projected volume reads the objects it projects (undefined: it does not exist). */
export type ProjectedReads = {
  configMap(name: string): Promise<V1ConfigMap | undefined>;
  secret(name: string): Promise<V1Secret | undefined>;
};

/**
 * The files of a projected volume: its configMap, secret, downwardAPI and serviceAccountToken
 * sources in one directory (the API server's `kube-api-access-*` volume is one). Tokens are
 * bound to the pod and kept until kubelet would renew them.
 */
export const projectedPayload = async (
  core: CoreV1Api,
  pod: V1Pod,
  volume: string,
  projected: V1ProjectedVolumeSource,
  reads: ProjectedReads,
  tokens: TokenCache,
): Promise<Payload> => {
  const defaultMode = projected.defaultMode ?? DEFAULT_MODE;
  const out = new Map<string, FileProjection>();
  const add = (p: Payload) => {
    for (const [path, file] of p) out.set(path, file);
  };
  for (const source of projected.sources ?? []) {
    if (source.configMap) {
      const name = source.configMap.name ?? '';
      add(configMapPayload(volume, { ...source.configMap, defaultMode }, await reads.configMap(name)));
    } else if (source.secret) {
      const name = source.secret.name ?? '';
      add(
        secretPayload(
          volume,
          { secretName: name, items: source.secret.items, optional: source.secret.optional, defaultMode },
          await reads.secret(name),
        ),
      );
    } else if (source.downwardAPI) {
      add(downwardApiPayload({ items: source.downwardAPI.items, defaultMode }, pod));
    } else if (source.serviceAccountToken) {
      const key = `${volume}/${source.serviceAccountToken.path}`;
      let held = tokens.get(key);
      if (!held || Date.now() >= held.renewAt) {
        held = await requestToken(core, pod, source.serviceAccountToken);
        tokens.set(key, held);
      }
      out.set(source.serviceAccountToken.path, { data: Buffer.from(held.token), mode: defaultMode });
    } else {
      const kind = Object.entries(source).find(([, v]) => v !== undefined)?.[0] ?? 'unknown';
      throw new ContainerConfigError(
        `volume ${volume}: projected ${kind} sources are not supported by the test bed's node agent`,
      );
    }
  }
  return out;
};
