import { type EtcdCluster, EtcdClusterSpecDefaults } from '../api/generated.ts';
import { etcdEngine } from '../engines/etcd.ts';
import { ENGINE_LABEL, MANAGED_BY_TIDEWAY } from '../engines/types.ts';

export const CLIENT_PORT = 2379;
export const PEER_PORT = 2380;
/** /health and /metrics, apart from the client port (probes need no client credentials). */
export const METRICS_PORT = 2381;
export const FIELD_MANAGER = 'tideway';
/** On a PVC: the cluster it was made for. PVCs carry no owner reference (data outlives its cluster). */
export const OWNER_UID = 'tideway.dev/owner-uid';
export const MEMBER_LABEL = 'tideway.dev/member';

/**
 * The image of each minor version Tideway runs, as the official images are tagged (the test bed
 * holds exactly these: infra/testbed/image-table/etcd.test.ts checks them against its pins).
 */
export const ETCD_IMAGES = {
  '3.5': 'gcr.io/etcd-development/etcd:v3.5.35',
  '3.6': 'gcr.io/etcd-development/etcd:v3.6.16',
} as const;

export type Cluster = Pick<EtcdCluster, 'metadata' | 'spec'>;

/** https with spec.tls: peers and clients alike (metrics stay http, for probes). */
export const schemeOf = (c: Pick<EtcdCluster, 'spec'>) => (c.spec.tls ? 'https' : 'http');

/** A member's client endpoint by pod IP (functions reach members by address, verifying the server name). */
export const endpointOf = (c: Pick<EtcdCluster, 'spec'>, podIP: string) =>
  `${schemeOf(c)}://${podIP}:${CLIENT_PORT}`;

export const namesOf = (c: Cluster) => {
  const name = c.metadata.name ?? '';
  const namespace = c.metadata.namespace ?? 'default';
  // Every name carries `-etcd`: a RedisCluster of the same name owns <name>, <name>-0, … there.
  const base = `${name}-etcd`;
  const peers = `${base}-peers`;
  /** A member's stable DNS name: <member>.<name>-etcd-peers.<namespace>.svc (hostname + subdomain). */
  const host = (member: string) => `${member}.${peers}.${namespace}.svc`;
  return {
    name,
    namespace,
    /** Members are <name>-etcd-<n>: pods, hostnames and etcd member names. */
    memberPrefix: base,
    clientService: base,
    peerService: peers,
    pdb: base,
    pvc: (member: string) => `data-${member}`,
    host,
    peerURL: (member: string) => `${schemeOf(c)}://${host(member)}:${PEER_PORT}`,
    clientURL: (member: string) => `${schemeOf(c)}://${host(member)}:${CLIENT_PORT}`,
  };
};

/** The member a peer URL names (its host's first label), or undefined for a URL not of this cluster. */
export const memberOfPeerURL = (c: Cluster, url: string): string | undefined => {
  try {
    const host = new URL(url).hostname;
    const [member, ...rest] = host.split('.');
    return member && rest.join('.') === `${namesOf(c).peerService}.${namesOf(c).namespace}.svc`
      ? member
      : undefined;
  } catch {
    return undefined;
  }
};

export const selectorLabels = (name: string) => ({
  [ENGINE_LABEL.name]: etcdEngine.label,
  [ENGINE_LABEL.instance]: name,
  [ENGINE_LABEL.managedBy]: MANAGED_BY_TIDEWAY,
});

/** `x.y` of a version (3.6.16 → 3.6). */
const minorOf = (version: string) => version.split('.').slice(0, 2).join('.');

/** The image a version runs: the user's, else the official image of that version. */
export const imageOf = (c: Pick<EtcdCluster, 'spec'>) => {
  if (c.spec.image) return c.spec.image;
  const version = c.spec.version ?? EtcdClusterSpecDefaults.version;
  const known = (ETCD_IMAGES as Record<string, string>)[minorOf(version)];
  if (!known) throw new Error(`no image known for etcd ${version}`);
  return version.split('.').length === 3 ? known.replace(/:v.*$/, `:v${version}`) : known;
};

/** Ordinal of a member name `<prefix>-<n>`, or -1. */
export const ordinalOf = (memberPrefix: string, member: string) => {
  const prefix = `${memberPrefix}-`;
  if (!member.startsWith(prefix)) return -1;
  const rest = member.slice(prefix.length);
  return /^(0|[1-9][0-9]{0,5})$/.test(rest) ? Number(rest) : -1;
};

/** Votes that make a majority of `size` members. */
export const quorumOf = (size: number) => Math.floor(size / 2) + 1;
