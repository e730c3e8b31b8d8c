import { isIP } from 'node:net';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { type ClusterView, SERVICE_NAME_LABEL } from './view.ts';

/**
 * One thing a name stands for, as CoreDNS's kubernetes plugin finds it: an address (a ClusterIP,
 * an endpoint, a pod) or, for an ExternalName Service, a host name; with the port (-1: none
 * declared) and the name an SRV record points at.
 */
export type Entry = { readonly host: string; readonly port: number; readonly target: string };

/** `entries` empty and `exists` true is NODATA; `exists` false is NXDOMAIN. */
export type Found = { readonly entries: readonly Entry[]; readonly exists: boolean };

const NODATA: Found = { entries: [], exists: true };
const NXDOMAIN: Found = { entries: [], exists: false };

/** The parts of a name below the cluster domain (RFC: the Kubernetes DNS specification). */
type Request = {
  kind: 'svc' | 'pod';
  namespace: string;
  service: string;
  endpoint: string;
  port: string;
  protocol: string;
};

const eq = (a: string | undefined, b: string | undefined) =>
  (a ?? '').toLowerCase() === (b ?? '').toLowerCase();
const unscore = (s: string) => s.replace(/^_/, '');

/**
 * Finds what `labels` (the name's labels below the zone, lower case) stand for:
 * `<svc>.<ns>.svc`, `<endpoint>.<svc>.<ns>.svc`, `_<port>._<proto>.<svc>.<ns>.svc` and
 * `<a-b-c-d>.<ns>.pod` (CoreDNS's `pods insecure`, kubeadm's default). A name of an existing
 * namespace, or `svc` or `pod` alone, exists without records.
 */
export const findRecords = (view: ClusterView, labels: readonly string[], zone: string): Found => {
  if (labels.length === 0) return NODATA;
  const kind = labels.at(-1);
  if (kind !== 'svc' && kind !== 'pod') return NXDOMAIN;
  if (labels.length === 1) return NODATA;
  const namespace = labels.at(-2) ?? '';
  if (!view.namespaceExists(namespace)) return NXDOMAIN;
  if (labels.length === 2) return NODATA;
  const rest = labels.slice(0, -3);
  if (rest.length > 2) return NXDOMAIN;
  const r: Request = {
    kind,
    namespace,
    service: labels.at(-3) ?? '',
    endpoint: rest.length === 1 ? (rest[0] ?? '') : '',
    port: rest.length === 2 ? unscore(rest[0] ?? '') : '',
    protocol: rest.length === 2 ? unscore(rest[1] ?? '') : '',
  };
  return kind === 'pod' ? findPod(r, zone) : findService(view, r, zone);
};

/** `1-2-3-4.<ns>.pod.<zone>` → 1.2.3.4, unchecked (`pods insecure`). */
const findPod = (r: Request, zone: string): Found => {
  const name = r.service;
  const ip =
    name.split('-').length === 4 && !name.includes('--')
      ? name.replaceAll('-', '.')
      : name.replaceAll('-', ':');
  if (!isIP(ip)) return NXDOMAIN;
  return { entries: [{ host: ip, port: 0, target: `${name}.${r.namespace}.pod.${zone}` }], exists: true };
};

const findService = (view: ClusterView, r: Request, zone: string): Found => {
  const svc = view.service(r.namespace, r.service);
  if (!svc) return NXDOMAIN;
  const svcName = `${svc.metadata?.name}.${svc.metadata?.namespace}.svc.${zone}`;
  if (svc.spec?.type === 'ExternalName') {
    const host = svc.spec.externalName ?? '';
    if (r.endpoint || r.port || r.protocol || host === '' || isIP(host)) return NXDOMAIN;
    return { entries: [{ host, port: -1, target: svcName }], exists: true };
  }
  const entries: Entry[] = [];
  if (isHeadless(svc) || r.endpoint) {
    for (const slice of view.endpointSlices(r.namespace, r.service)) {
      for (const e of readyAddresses(slice)) {
        if (r.endpoint && !eq(r.endpoint, e.hostname)) continue;
        for (const p of slicePorts(slice)) {
          if (!portMatches(r, p.name, p.protocol)) continue;
          entries.push({ host: e.ip, port: p.port, target: `${e.hostname}.${svcName}` });
        }
      }
    }
    return entries.length > 0 ? { entries, exists: true } : NXDOMAIN;
  }
  let matched = false;
  for (const p of svc.spec?.ports ?? []) {
    if (!portMatches(r, p.name, p.protocol)) continue;
    matched = true;
    for (const ip of clusterIps(svc)) entries.push({ host: ip, port: p.port, target: svcName });
  }
  return matched ? { entries, exists: true } : NXDOMAIN;
};

const portMatches = (r: Request, name: string | undefined, protocol: string | undefined) =>
  (r.port === '' || eq(r.port, name)) && (r.protocol === '' || eq(r.protocol, protocol));

export const clusterIps = (svc: V1Service): string[] =>
  svc.spec?.clusterIPs ?? (svc.spec?.clusterIP ? [svc.spec.clusterIP] : []);

export const isHeadless = (svc: V1Service): boolean => clusterIps(svc)[0] === 'None';

/** A slice's ports; none declared is one port -1, as CoreDNS has it (A records, but no SRV). */
const slicePorts = (slice: V1EndpointSlice) =>
  slice.ports && slice.ports.length > 0
    ? slice.ports.map((p) => ({ name: p.name ?? '', protocol: p.protocol ?? '', port: p.port ?? -1 }))
    : [{ name: '', protocol: '', port: -1 }];

/**
 * The slice's addresses whose endpoint is ready (unknown counts as ready, as the API says). The
 * EndpointSlice controller marks every endpoint of a Service with publishNotReadyAddresses
 * ready, so that is where not-ready pods come in, exactly as on a real cluster.
 */
export const readyAddresses = (slice: V1EndpointSlice): { ip: string; hostname: string }[] =>
  (slice.endpoints ?? [])
    .filter((e) => e.conditions?.ready !== false)
    .flatMap((e) => e.addresses.map((ip) => ({ ip, hostname: e.hostname || dashed(ip) })));

/** An endpoint without a hostname is named by its address: 10-244-0-5, or fd00--5 for IPv6. */
const dashed = (ip: string): string => {
  if (ip.includes('.')) return ip.replaceAll('.', '-');
  const d = ip.replaceAll(':', '-');
  return d.endsWith('-') ? `${d}0` : d;
};

/** Names for PTR: a Service by its ClusterIP first, else every ready endpoint with the address. */
export const namesForIp = (view: ClusterView, ip: string, zone: string): string[] => {
  const svc = view.servicesWithIp(ip)[0];
  if (svc) return [`${svc.metadata?.name}.${svc.metadata?.namespace}.svc.${zone}`];
  return view.slicesWithAddress(ip).flatMap((slice) =>
    readyAddresses(slice)
      .filter((e) => e.ip === ip)
      .map(
        (e) =>
          `${e.hostname}.${slice.metadata?.labels?.[SERVICE_NAME_LABEL]}.${slice.metadata?.namespace}.svc.${zone}`,
      ),
  );
};
