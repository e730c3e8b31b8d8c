import type { CoreV1Api, V1Container, V1Pod, V1Service } from '@kubernetes/client-node';
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

/** What runtimes set when neither the image nor the pod names a PATH. */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const envName = (service: string) => service.toUpperCase().replaceAll('-', '_');

/**
 * kubelet's Docker-link variables for Services with a cluster IP: `<NAME>_SERVICE_HOST`,
 * `<NAME>_SERVICE_PORT[_<PORT>]`, `<NAME>_PORT[_<port>_<PROTO>[_PROTO|_PORT|_ADDR]]`.
 */
export const serviceEnv = (services: readonly V1Service[]): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const s of services) {
    const ip = s.spec?.clusterIP;
    const ports = s.spec?.ports ?? [];
    if (!ip || ip === 'None' || ports.length === 0) continue;
    const name = envName(s.metadata?.name ?? '');
    const first = ports[0];
    env[`${name}_SERVICE_HOST`] = ip;
    env[`${name}_SERVICE_PORT`] = String(first?.port);
    for (const p of ports) if (p.name) env[`${name}_SERVICE_PORT_${envName(p.name)}`] = String(p.port);
    env[`${name}_PORT`] = `${(first?.protocol ?? 'TCP').toLowerCase()}://${ip}:${first?.port}`;
    for (const p of ports) {
      const proto = p.protocol ?? 'TCP';
      const prefix = `${name}_PORT_${p.port}_${proto}`;
      env[prefix] = `${proto.toLowerCase()}://${ip}:${p.port}`;
      env[`${prefix}_PROTO`] = proto.toLowerCase();
      env[`${prefix}_PORT`] = String(p.port);
      env[`${prefix}_ADDR`] = ip;
    }
  }
  return env;
};

/**
 * The Services whose variables a pod gets: those of its namespace (with enableServiceLinks, the
 * default), and always the API server's `kubernetes` Service, so in-cluster clients find it.
 */
const visibleServices = async (core: CoreV1Api, ns: string, links: boolean): Promise<V1Service[]> => {
  const master = await core
    .readNamespacedService({ namespace: 'default', name: 'kubernetes' })
    .catch(() => undefined);
  const own = links
    ? await core.listNamespacedService({ namespace: ns }).then(
        (l) => l.items,
        (error: unknown) => {
          throw new ContainerConfigError(`could not list the services of ${ns}: ${String(error)}`);
        },
      )
    : [];
  return [
    ...own.filter((s) => !(ns === 'default' && s.metadata?.name === 'kubernetes')),
    ...(master ? [master] : []),
  ];
};

/**
 * A container's environment as a runtime builds it: the image's Env, a default PATH when it has
 * none, HOSTNAME, HOME from the user's passwd entry when nobody set it, then the pod's entries
 * (which win).
 */
export const containerEnv = (o: {
  image: readonly string[];
  hostname: string;
  home: string;
  pod: Readonly<Record<string, string>>;
}): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const e of o.image) {
    const eq = e.indexOf('=');
    if (eq > 0) env[e.slice(0, eq)] = e.slice(eq + 1);
  }
  env.PATH ??= DEFAULT_PATH;
  env.HOSTNAME = o.hostname;
  env.HOME ??= o.home;
  return { ...env, ...o.pod };
};

/**
 * The pod's part of a container's environment, resolved like kubelet: Service variables, then
 * envFrom and env in order (later entries win, $(VAR) refers to earlier ones).
 */
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
  // Service variables first: the pod's own entries may refer to them and win over them.
  const env: Record<string, string> = serviceEnv(
    await visibleServices(core, ns, pod.spec?.enableServiceLinks ?? true),
  );
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
