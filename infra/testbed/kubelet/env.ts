import type { CoreV1Api, V1Container, V1Pod } from '@kubernetes/client-node';
import { expand } from './command.ts';

/** A container's configuration cannot be honoured (missing Secret key, unknown field path, …). */
export class ContainerConfigError extends Error {
  override readonly name = 'ContainerConfigError';
  readonly retry = true; // the Secret or ConfigMap may appear later, as with kubelet
}

const fieldPath = (pod: V1Pod, path: string, hostIp: string): string => {
  const m = pod.metadata ?? {};
  const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (label) return (label[1] === 'labels' ? m.labels : m.annotations)?.[label[2] ?? ''] ?? '';
  const values: Record<string, string | undefined> = {
    'metadata.name': m.name,
    'metadata.namespace': m.namespace,
    'metadata.uid': m.uid,
    'spec.nodeName': pod.spec?.nodeName,
    'spec.serviceAccountName': pod.spec?.serviceAccountName ?? 'default',
    'status.podIP': pod.status?.podIP,
    'status.hostIP': hostIp,
  };
  if (!(path in values))
    throw new ContainerConfigError(`fieldRef ${path} is not supported by the test bed's node agent`);
  return values[path] ?? '';
};

/** Resolves env and envFrom like kubelet: later entries win, $(VAR) refers to earlier ones. */
export const resolveEnv = async (
  core: CoreV1Api,
  pod: V1Pod,
  container: V1Container,
  podIp: string,
  hostIp: string,
): Promise<Record<string, string>> => {
  const ns = pod.metadata?.namespace ?? 'default';
  const secrets = new Map<string, Record<string, string> | undefined>();
  const configMaps = new Map<string, Record<string, string> | undefined>();
  const secret = async (name: string) => {
    if (!secrets.has(name)) {
      const s = await core.readNamespacedSecret({ namespace: ns, name }).catch(() => undefined);
      secrets.set(
        name,
        s
          ? Object.fromEntries(
              Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
            )
          : undefined,
      );
    }
    return secrets.get(name);
  };
  const configMap = async (name: string) => {
    if (!configMaps.has(name)) {
      const c = await core.readNamespacedConfigMap({ namespace: ns, name }).catch(() => undefined);
      configMaps.set(name, c ? { ...(c.data ?? {}) } : undefined);
    }
    return configMaps.get(name);
  };
  const withIp: V1Pod = { ...pod, status: { ...pod.status, podIP: podIp } };
  const env: Record<string, string> = {
    PATH: '/tideway/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOSTNAME: pod.metadata?.name ?? '',
    HOME: '/root',
  };
  for (const from of container.envFrom ?? []) {
    const source = from.secretRef
      ? await secret(from.secretRef.name ?? '')
      : await configMap(from.configMapRef?.name ?? '');
    const optional = from.secretRef?.optional ?? from.configMapRef?.optional ?? false;
    if (!source && !optional) {
      throw new ContainerConfigError(
        `envFrom ${from.secretRef ? 'secret' : 'configmap'} ${from.secretRef?.name ?? from.configMapRef?.name} not found`,
      );
    }
    for (const [k, v] of Object.entries(source ?? {})) env[`${from.prefix ?? ''}${k}`] = v;
  }
  for (const e of container.env ?? []) {
    if (e.valueFrom === undefined) {
      env[e.name] = expand(e.value ?? '', env);
      continue;
    }
    const vf = e.valueFrom;
    if (vf.fieldRef) env[e.name] = fieldPath(withIp, vf.fieldRef.fieldPath, hostIp);
    else if (vf.secretKeyRef || vf.configMapKeyRef) {
      const ref = vf.secretKeyRef ?? vf.configMapKeyRef;
      const data = vf.secretKeyRef ? await secret(ref?.name ?? '') : await configMap(ref?.name ?? '');
      const value = data?.[ref?.key ?? ''];
      if (value === undefined) {
        if (ref?.optional) continue;
        throw new ContainerConfigError(
          `${vf.secretKeyRef ? 'secret' : 'configmap'} "${ref?.name}" has no key "${ref?.key}" (env ${e.name})`,
        );
      }
      env[e.name] = value;
    } else if (vf.resourceFieldRef) {
      const r = vf.resourceFieldRef.resource;
      const [kind, res] = r.split('.');
      const v = (kind === 'limits' ? container.resources?.limits : container.resources?.requests)?.[
        res ?? ''
      ];
      env[e.name] = v === undefined ? (res === 'cpu' ? '2' : String(24 * 1024 ** 3)) : String(v);
    } else {
      throw new ContainerConfigError(
        `env ${e.name}: this kind of valueFrom is not supported by the test bed's node agent`,
      );
    }
  }
  return env;
};
