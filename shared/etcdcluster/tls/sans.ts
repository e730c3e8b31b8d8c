import { type Cluster, namesOf } from '../names.ts';

export const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';

export type TlsPart = 'peer' | 'server' | 'client';

// Read through a local shape so this compiles whether or not the generated type has `tls` yet.
type TlsSpec = {
  peer?: { secretName?: string };
  server?: { secretName?: string };
  client?: { secretName?: string };
};
const tlsOf = (c: Cluster) => (c.spec as { tls?: TlsSpec }).tls;

/** The Secret Tideway generates for a part when spec.tls does not name one. */
export const defaultSecretName = (c: Cluster, p: TlsPart) => `${namesOf(c).name}-etcd-${p}-tls`;

export const tlsSecretNames = (c: Cluster): { ca: string; peer: string; server: string; client: string } => {
  const { name } = namesOf(c);
  const tls = tlsOf(c);
  const part = (p: TlsPart) => tls?.[p]?.secretName ?? defaultSecretName(c, p);
  return { ca: `${name}-etcd-ca`, peer: part('peer'), server: part('server'), client: part('client') };
};

/** The peers' headless Service: every member's host name ends with it. */
const peersOf = (c: Cluster) => {
  const n = namesOf(c);
  return `${n.peerService}.${n.namespace}.svc`;
};

/** The one name Tideway verifies every member's server certificate against (all share it). */
export const serverNameOf = (c: Cluster) => {
  const n = namesOf(c);
  return `${n.clientService}.${n.namespace}.svc`;
};

/**
 * `*.P.D`: reverse lookups answer the FQDN, and etcd's peer SAN check wants a suffix match;
 * `P`: the one non-wildcard name that resolves to every member for its forward lookup.
 */
export const peerSans = (c: Cluster, domain: string) => {
  const p = peersOf(c);
  return { dns: [`*.${p}`, `*.${p}.${domain}`, p], ips: [] as string[] };
};

/** The advertised client URLs, the client Service by every short form, and etcdctl inside a pod. */
export const serverSans = (c: Cluster, domain: string) => {
  const p = peersOf(c);
  const { clientService: s, namespace: ns } = namesOf(c);
  return {
    dns: [
      `*.${p}`,
      `*.${p}.${domain}`,
      `${s}.${ns}.svc`,
      `${s}.${ns}.svc.${domain}`,
      `${s}.${ns}`,
      s,
      'localhost',
    ],
    ips: ['127.0.0.1'],
  };
};

/** Names a given certificate must answer to (checked with X509Certificate.checkHost); `x` stands for any member. */
export const requiredHosts = (c: Cluster, part: TlsPart): string[] => {
  const p = peersOf(c);
  if (part === 'peer') return [`x.${p}`, p];
  if (part === 'server') return [`x.${p}`, serverNameOf(c)];
  return [];
};
