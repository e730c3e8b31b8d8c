import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { CoreV1Api, V1Pod, V1Volume } from '@kubernetes/client-node';
import { isNotFound } from '../../../shared/kube/errors.ts';
import { type Payload, PayloadPathError, writeAtomic } from './atomic-writer.ts';
import { ContainerConfigError } from './env.ts';
import { configMapPayload, downwardApiPayload, secretPayload } from './payload.ts';
import { projectedPayload, type TokenCache } from './projected.ts';

/** A volume of a pod on the host. */
type HostVolume = {
  readonly path: string;
  /** kubelet mounts configMap, secret, downwardAPI and projected volumes read-only, whatever the pod asks. */
  readonly readOnly: boolean;
};

/** Where each volume of a pod lives on the host, by volume name. */
export type PodVolumes = ReadonlyMap<string, HostVolume>;

/** Reads an API object; undefined when it does not exist, a retryable error when the read failed. */
const readOrMissing = async <T>(what: string, read: () => Promise<T>): Promise<T | undefined> => {
  try {
    return await read();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw new ContainerConfigError(`could not read ${what}: ${String(error)}`, { cause: error });
  }
};

/** The files an API-data volume should hold now; undefined for other kinds of volume. */
const apiDataPayload = async (
  core: CoreV1Api,
  pod: V1Pod,
  v: V1Volume,
  tokens: TokenCache,
): Promise<Payload | undefined> => {
  const namespace = pod.metadata?.namespace ?? 'default';
  const configMap = (name: string) =>
    readOrMissing(`configmap "${name}"`, () => core.readNamespacedConfigMap({ namespace, name }));
  const secret = (name: string) =>
    readOrMissing(`secret "${name}"`, () => core.readNamespacedSecret({ namespace, name }));
  if (v.configMap) return configMapPayload(v.name, v.configMap, await configMap(v.configMap.name ?? ''));
  if (v.secret) return secretPayload(v.name, v.secret, await secret(v.secret.secretName ?? ''));
  if (v.downwardAPI) return downwardApiPayload(v.downwardAPI, pod);
  if (v.projected) return projectedPayload(core, pod, v.name, v.projected, { configMap, secret }, tokens);
  return undefined;
};

const volumeDir = (podDir: string, name: string) => join(podDir, 'volumes', name);

/**
 * Materializes a pod's volumes as directories under podDir: emptyDir (mode 0777, as kubelet
 * makes it, so a container of any user can write); configMap, secret, downwardAPI and projected
 * written atomically (see writeAtomic); persistentVolumeClaim and hostPath point at existing
 * directories (a PVC's outlives the pod). Anything else is refused with a message, never ignored.
 */
export const prepareVolumes = async (
  core: CoreV1Api,
  pod: V1Pod,
  podDir: string,
  tokens: TokenCache,
): Promise<PodVolumes> => {
  const ns = pod.metadata?.namespace ?? 'default';
  const out = new Map<string, HostVolume>();
  for (const v of (pod.spec?.volumes ?? []) as V1Volume[]) {
    const dir = volumeDir(podDir, v.name);
    const payload = await apiDataPayload(core, pod, v, tokens);
    if (payload) {
      try {
        await writeAtomic(dir, payload);
      } catch (error) {
        if (!(error instanceof PayloadPathError)) throw error;
        throw new ContainerConfigError(`volume ${v.name}: ${error.message}`, { cause: error });
      }
      out.set(v.name, { path: dir, readOnly: true });
    } else if (v.emptyDir) {
      await mkdir(dir, { recursive: true });
      await chmod(dir, 0o777);
      out.set(v.name, { path: dir, readOnly: false });
    } else if (v.persistentVolumeClaim) {
      const claim = v.persistentVolumeClaim.claimName;
      const pvc = await core
        .readNamespacedPersistentVolumeClaim({ namespace: ns, name: claim })
        .catch(() => undefined);
      if (!pvc?.spec?.volumeName || pvc.status?.phase !== 'Bound')
        throw new ContainerConfigError(`persistentvolumeclaim "${claim}" is not bound yet`);
      const pv = await core.readPersistentVolume({ name: pvc.spec.volumeName });
      const path = pv.spec?.hostPath?.path ?? pv.spec?.local?.path;
      if (!path)
        throw new ContainerConfigError(`persistentvolume ${pv.metadata?.name} has no hostPath or local path`);
      out.set(v.name, { path, readOnly: false });
    } else if (v.hostPath) {
      out.set(v.name, { path: v.hostPath.path, readOnly: false });
    } else {
      const kind = Object.keys(v).find((k) => k !== 'name') ?? 'unknown';
      throw new ContainerConfigError(
        `volume ${v.name}: ${kind} volumes are not supported by the test bed's node agent`,
      );
    }
  }
  return out;
};

/**
 * Brings a running pod's configMap, secret, downwardAPI and projected volumes up to date with
 * the API, as kubelet does on its periodic pod sync (a projected token is renewed when kubelet
 * would). A volume whose source cannot be projected now (a deleted required ConfigMap or Secret,
 * a missing item key, a failed read) keeps its last content, as with kubelet; an optional source
 * that is gone empties its volume. The next call tries again.
 */
export const refreshVolumes = async (
  core: CoreV1Api,
  pod: V1Pod,
  volumes: PodVolumes,
  tokens: TokenCache,
): Promise<void> => {
  for (const v of (pod.spec?.volumes ?? []) as V1Volume[]) {
    const host = volumes.get(v.name);
    if (!host) continue;
    try {
      const payload = await apiDataPayload(core, pod, v, tokens);
      if (payload) await writeAtomic(host.path, payload);
    } catch (error) {
      if (!(error instanceof ContainerConfigError || error instanceof PayloadPathError)) throw error;
    }
  }
};
