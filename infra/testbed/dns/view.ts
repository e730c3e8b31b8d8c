import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';

/** The label the EndpointSlice controller puts on every slice it manages for a Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** What the cluster DNS answers from: the API objects as last seen, indexed for its questions. */
export type ClusterView = {
  /** False until the first list of every kind arrived (CoreDNS answers SERVFAIL until then). */
  readonly synced: boolean;
  namespaceExists(name: string): boolean;
  service(namespace: string, name: string): V1Service | undefined;
  /** The Service's EndpointSlices (by the `kubernetes.io/service-name` label). */
  endpointSlices(namespace: string, service: string): readonly V1EndpointSlice[];
  /** Services with this ClusterIP, for PTR. */
  servicesWithIp(ip: string): readonly V1Service[];
  /** EndpointSlices holding this address, for PTR. */
  slicesWithAddress(ip: string): readonly V1EndpointSlice[];
};

export type ClusterObjects = {
  readonly synced: boolean;
  readonly namespaces: Iterable<string>;
  readonly services: Iterable<V1Service>;
  readonly endpointSlices: Iterable<V1EndpointSlice>;
};

const key = (namespace: string | undefined, name: string | undefined) => `${namespace ?? ''}/${name ?? ''}`;

/** Indexes a set of objects (names compared case-insensitively, as DNS names are). */
export const viewOf = (o: ClusterObjects): ClusterView => {
  const namespaces = new Set([...o.namespaces].map((n) => n.toLowerCase()));
  const services = new Map<string, V1Service>();
  const byIp = new Map<string, V1Service[]>();
  for (const s of o.services) {
    services.set(key(s.metadata?.namespace, s.metadata?.name).toLowerCase(), s);
    for (const ip of s.spec?.clusterIPs ?? (s.spec?.clusterIP ? [s.spec.clusterIP] : [])) {
      byIp.set(ip, [...(byIp.get(ip) ?? []), s]);
    }
  }
  const slices = new Map<string, V1EndpointSlice[]>();
  const byAddress = new Map<string, V1EndpointSlice[]>();
  for (const es of o.endpointSlices) {
    const service = es.metadata?.labels?.[SERVICE_NAME_LABEL];
    if (!service) continue;
    const k = key(es.metadata?.namespace, service).toLowerCase();
    slices.set(k, [...(slices.get(k) ?? []), es]);
    for (const ip of new Set(es.endpoints?.flatMap((e) => e.addresses) ?? [])) {
      byAddress.set(ip, [...(byAddress.get(ip) ?? []), es]);
    }
  }
  return {
    synced: o.synced,
    namespaceExists: (name) => namespaces.has(name.toLowerCase()),
    service: (namespace, name) => services.get(key(namespace, name).toLowerCase()),
    endpointSlices: (namespace, service) => slices.get(key(namespace, service).toLowerCase()) ?? [],
    servicesWithIp: (ip) => byIp.get(ip) ?? [],
    slicesWithAddress: (ip) => byAddress.get(ip) ?? [],
  };
};
