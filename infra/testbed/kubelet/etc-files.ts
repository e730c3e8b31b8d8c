import type { V1Pod } from '@kubernetes/client-node';

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

/**
 * The pod's /etc/resolv.conf. There is no cluster DNS on the test bed, and kubelet without
 * --cluster-dns gives ClusterFirst pods the node's resolver, as for dnsPolicy Default; `None`
 * takes only spec.dnsConfig, which is appended in the other cases.
 */
export const resolvConf = (pod: V1Pod, hostResolvConf: string): string => {
  const c = pod.spec?.dnsConfig;
  const base = pod.spec?.dnsPolicy === 'None' ? '' : hostResolvConf.trimEnd();
  const extra = [
    ...(c?.nameservers ?? []).map((n) => `nameserver ${n}`),
    ...(c?.searches?.length ? [`search ${c.searches.join(' ')}`] : []),
    ...(c?.options?.length
      ? [`options ${c.options.map((o) => (o.value ? `${o.name}:${o.value}` : o.name)).join(' ')}`]
      : []),
  ];
  return `${[base, ...extra].filter(Boolean).join('\n')}\n`;
};
