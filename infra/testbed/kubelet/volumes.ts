import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CoreV1Api, V1Pod, V1Volume } from '@kubernetes/client-node';
import { ContainerConfigError } from './env.ts';

/** Where each volume of a pod lives on the host. */
export type PodVolumes = Map<string, string>;

const writeKeys = async (
  dir: string,
  data: Record<string, Buffer>,
  items: { key: string; path: string; mode?: number }[] | undefined,
  mode: number,
) => {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const entries = items?.length
    ? items.map((i) => [i.path, data[i.key], i.mode] as const)
    : Object.entries(data).map(([k, v]) => [k, v, undefined] as const);
  for (const [path, value, m] of entries) {
    if (value === undefined) continue;
    const file = join(dir, path);
    await mkdir(join(file, '..'), { recursive: true });
    await writeFile(file, value);
    await chmod(file, m ?? mode);
  }
};

/**
 * Materializes a pod's volumes as directories under podDir: emptyDir, configMap, secret,
 * downwardAPI; persistentVolumeClaim and hostPath point at existing directories (a PVC's
 * outlives the pod). Anything else is refused with a message, never ignored.
 */
export const prepareVolumes = async (core: CoreV1Api, pod: V1Pod, podDir: string): Promise<PodVolumes> => {
  const ns = pod.metadata?.namespace ?? 'default';
  const out: PodVolumes = new Map();
  for (const v of (pod.spec?.volumes ?? []) as V1Volume[]) {
    const dir = join(podDir, 'volumes', v.name);
    if (v.emptyDir) {
      await mkdir(dir, { recursive: true });
      out.set(v.name, dir);
    } else if (v.configMap) {
      const cm = await core
        .readNamespacedConfigMap({ namespace: ns, name: v.configMap.name ?? '' })
        .catch(() => undefined);
      if (!cm && !v.configMap.optional)
        throw new ContainerConfigError(`configmap "${v.configMap.name}" not found (volume ${v.name})`);
      const data: Record<string, Buffer> = {};
      for (const [k, s] of Object.entries(cm?.data ?? {})) data[k] = Buffer.from(s);
      for (const [k, s] of Object.entries(cm?.binaryData ?? {})) data[k] = Buffer.from(s, 'base64');
      await writeKeys(dir, data, v.configMap.items, v.configMap.defaultMode ?? 0o644);
      out.set(v.name, dir);
    } else if (v.secret) {
      const s = await core
        .readNamespacedSecret({ namespace: ns, name: v.secret.secretName ?? '' })
        .catch(() => undefined);
      if (!s && !v.secret.optional)
        throw new ContainerConfigError(`secret "${v.secret.secretName}" not found (volume ${v.name})`);
      const data: Record<string, Buffer> = {};
      for (const [k, b] of Object.entries(s?.data ?? {})) data[k] = Buffer.from(b, 'base64');
      await writeKeys(dir, data, v.secret.items, v.secret.defaultMode ?? 0o644);
      out.set(v.name, dir);
    } else if (v.downwardAPI) {
      const m = pod.metadata ?? {};
      const fmt = (r: Record<string, string> | undefined) =>
        Object.entries(r ?? {})
          .map(([k, val]) => `${k}=${JSON.stringify(val)}`)
          .join('\n');
      const data: Record<string, Buffer> = {};
      for (const item of v.downwardAPI.items ?? []) {
        const p = item.fieldRef?.fieldPath;
        const value =
          p === 'metadata.labels'
            ? fmt(m.labels)
            : p === 'metadata.annotations'
              ? fmt(m.annotations)
              : p === 'metadata.name'
                ? m.name
                : p === 'metadata.namespace'
                  ? m.namespace
                  : p === 'metadata.uid'
                    ? m.uid
                    : undefined;
        if (value === undefined)
          throw new ContainerConfigError(
            `downwardAPI ${p ?? item.resourceFieldRef?.resource} is not supported by the test bed's node agent`,
          );
        data[item.path] = Buffer.from(value);
      }
      await writeKeys(dir, data, undefined, v.downwardAPI.defaultMode ?? 0o644);
      out.set(v.name, dir);
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
      out.set(v.name, path);
    } else if (v.hostPath) {
      out.set(v.name, v.hostPath.path);
    } else {
      const kind = Object.keys(v).find((k) => k !== 'name') ?? 'unknown';
      throw new ContainerConfigError(
        `volume ${v.name}: ${kind} volumes are not supported by the test bed's node agent`,
      );
    }
  }
  return out;
};
