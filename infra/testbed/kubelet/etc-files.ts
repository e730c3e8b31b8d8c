import type { V1Pod } from '@kubernetes/client-node';
import { formatResolvConf, parseResolvConf, type ResolvConf } from '../dns/resolv-conf.ts';

/** The pod's host name: spec.hostname, else its name, cut to 63 characters as kubelet does. */
export const podHostname = (pod: V1Pod): string =>
  (pod.spec?.hostname || pod.metadata?.name || 'pod').slice(0, 63).replace(/[-.]+$/, '');

/**
 * kubelet's managed /etc/hosts: the loopback and IPv6 names, the pod's own name (its FQDN first
 * when it has a subdomain, as StatefulSet pods do), then spec.hostAliases.
 */
export const hostsFile = (pod: V1Pod, podIp: string, clusterDomain = 'cluster.local'): string => {
  const name = podHostname(pod);
  const sub = pod.spec?.subdomain;
  const own = sub
    ? `${name}.${sub}.${pod.metadata?.namespace ?? 'default'}.svc.${clusterDomain}\t${name}`
    : name;
  const lines = [
    '# Kubernetes-managed hosts file.',
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
    'fe00::0\tip6-localnet',
    'fe00::0\tip6-mcastprefix',
    'fe00::1\tip6-allnodes',
    'fe00::2\tip6-allrouters',
    `${podIp}\t${own}`,
  ];
  const aliases = pod.spec?.hostAliases ?? [];
  if (aliases.length > 0) {
    lines.push('', '# Entries added by HostAliases.');
    for (const a of aliases) lines.push(`${a.ip}\t${(a.hostnames ?? []).join('\t')}`);
  }
  return `${lines.join('\n')}\n`;
};

/** What kubelet's --cluster-dns and --cluster-domain say. */
export type ClusterDnsConfig = { readonly nameservers: readonly string[]; readonly domain: string };

/**
 * The pod's /etc/resolv.conf, as kubelet forms it (pkg/kubelet/network/dns) and containerd
 * writes it (search, nameserver, options):
 * - `ClusterFirst` (the default): the cluster DNS, the search path `<ns>.svc.<domain>
 *   svc.<domain> <domain>` and the node's search domains, `options ndots:5`. A hostNetwork pod
 *   gets the node's instead, unless its policy is `ClusterFirstWithHostNet`; without a cluster
 *   DNS (`cluster` undefined) kubelet falls back to the node's as well.
 * - `Default`: the node's nameservers, search domains and options.
 * - `None`: nothing but spec.dnsConfig.
 * spec.dnsConfig is then merged in (duplicates dropped, its options override ones of the same
 * name), and the result cut to kubelet's limits: 3 nameservers, 32 search domains of at most
 * 253 characters, 2048 characters in all.
 */
export const resolvConf = (pod: V1Pod, hostResolvConf: string, cluster?: ClusterDnsConfig): string => {
  const host = parseResolvConf(hostResolvConf);
  const policy = pod.spec?.dnsPolicy ?? 'ClusterFirst';
  const useCluster =
    policy === 'ClusterFirstWithHostNet' ||
    (policy !== 'None' && policy !== 'Default' && !pod.spec?.hostNetwork);
  let c: ResolvConf = host;
  if (policy === 'None') c = { nameservers: [], searches: [], options: [] };
  else if (useCluster && cluster) {
    const ns = pod.metadata?.namespace ?? 'default';
    c = {
      nameservers: cluster.nameservers,
      searches: unique([
        `${ns}.svc.${cluster.domain}`,
        `svc.${cluster.domain}`,
        cluster.domain,
        ...host.searches,
      ]),
      options: ['ndots:5'],
    };
  }
  const extra = pod.spec?.dnsConfig;
  if (extra) {
    c = {
      nameservers: unique([...c.nameservers, ...(extra.nameservers ?? [])]),
      searches: unique([...c.searches, ...(extra.searches ?? [])]),
      options: mergeOptions(c.options, extra.options ?? []),
    };
  }
  const text = formatResolvConf({
    ...c,
    nameservers: c.nameservers.slice(0, 3),
    searches: fitSearches(c.searches),
  });
  // containerd copies the node's file when kubelet hands it nothing to write.
  return text === '' ? hostResolvConf : text;
};

const unique = (xs: readonly string[]): string[] => [...new Set(xs)];

/** kubelet keeps options in a map (so its order varies); here the first place of a name wins. */
const mergeOptions = (existing: readonly string[], given: readonly { name?: string; value?: string }[]) => {
  const options = new Map<string, string>();
  for (const o of existing) {
    const at = o.indexOf(':');
    options.set(at < 0 ? o : o.slice(0, at), at < 0 ? '' : o.slice(at + 1));
  }
  for (const o of given) options.set(o.name ?? '', o.value ?? '');
  return [...options].map(([name, value]) => (value ? `${name}:${value}` : name));
};

const fitSearches = (searches: readonly string[]): string[] => {
  const kept = searches.slice(0, 32).filter((s) => s.length <= 253);
  while (kept.join(' ').length > 2048) kept.pop();
  return kept;
};
