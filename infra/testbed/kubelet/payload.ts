import type {
  V1ConfigMap,
  V1ConfigMapVolumeSource,
  V1DownwardAPIVolumeSource,
  V1KeyToPath,
  V1Pod,
  V1Secret,
  V1SecretVolumeSource,
} from '@kubernetes/client-node';
import type { FileProjection, Payload } from './atomic-writer.ts';
import { ContainerConfigError } from './env.ts';

const DEFAULT_MODE = 0o644;

/** kubelet's rules: all keys, or only the listed items (a missing key fails unless optional). */
const project = (
  what: string,
  data: Readonly<Record<string, Buffer>>,
  items: readonly V1KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean,
): Payload => {
  const out = new Map<string, FileProjection>();
  if (!items?.length) {
    for (const [key, value] of Object.entries(data)) out.set(key, { data: value, mode: defaultMode });
    return out;
  }
  for (const item of items) {
    const value = data[item.key];
    if (value === undefined) {
      if (optional) continue;
      throw new ContainerConfigError(`${what} has no key "${item.key}"`);
    }
    out.set(item.path, { data: value, mode: item.mode ?? defaultMode });
  }
  return out;
};

/**
 * The files of a configMap volume. `cm` undefined means the ConfigMap does not exist: an optional
 * volume is then empty, a required one cannot be set up.
 */
export const configMapPayload = (
  volume: string,
  source: V1ConfigMapVolumeSource,
  cm: V1ConfigMap | undefined,
): Payload => {
  const what = `configmap "${source.name}" (volume ${volume})`;
  if (!cm) {
    if (source.optional) return new Map();
    throw new ContainerConfigError(`${what} not found`);
  }
  const data: Record<string, Buffer> = {};
  for (const [k, s] of Object.entries(cm.data ?? {})) data[k] = Buffer.from(s);
  for (const [k, s] of Object.entries(cm.binaryData ?? {})) data[k] = Buffer.from(s, 'base64');
  return project(what, data, source.items, source.defaultMode ?? DEFAULT_MODE, source.optional ?? false);
};

/** The files of a secret volume; `secret` undefined means it does not exist (see configMapPayload). */
export const secretPayload = (
  volume: string,
  source: V1SecretVolumeSource,
  secret: V1Secret | undefined,
): Payload => {
  const what = `secret "${source.secretName}" (volume ${volume})`;
  if (!secret) {
    if (source.optional) return new Map();
    throw new ContainerConfigError(`${what} not found`);
  }
  const data: Record<string, Buffer> = {};
  for (const [k, b] of Object.entries(secret.data ?? {})) data[k] = Buffer.from(b, 'base64');
  return project(what, data, source.items, source.defaultMode ?? DEFAULT_MODE, source.optional ?? false);
};

// kubelet's format for labels and annotations: key="value" lines, sorted by key.
const pairs = (r: Readonly<Record<string, string>> | undefined) =>
  Object.entries(r ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join('\n');

/** The files of a downwardAPI volume from the pod as last seen (labels and annotations change). */
export const downwardApiPayload = (source: V1DownwardAPIVolumeSource, pod: V1Pod): Payload => {
  const m = pod.metadata ?? {};
  const out = new Map<string, FileProjection>();
  for (const item of source.items ?? []) {
    const p = item.fieldRef?.fieldPath;
    const value =
      p === 'metadata.labels'
        ? pairs(m.labels)
        : p === 'metadata.annotations'
          ? pairs(m.annotations)
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
    out.set(item.path, { data: Buffer.from(value), mode: item.mode ?? source.defaultMode ?? DEFAULT_MODE });
  }
  return out;
};
