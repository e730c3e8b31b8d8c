import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { hostsFile, podHostname, resolvConf } from './etc-files.ts';

describe('pod files', () => {
  it("writes kubelet's /etc/hosts: the pod's FQDN with a subdomain, then hostAliases", () => {
    const pod = {
      metadata: { name: 'redis-0', namespace: 'db' },
      spec: {
        subdomain: 'redis-headless',
        hostAliases: [{ ip: '10.0.0.5', hostnames: ['a', 'b'] }],
        containers: [],
      },
    };
    const lines = hostsFile(pod, '10.244.0.7').split('\n');
    expect(lines[0]).toBe('# Kubernetes-managed hosts file.');
    expect(lines).toContain('127.0.0.1\tlocalhost');
    expect(lines).toContain('10.244.0.7\tredis-0.redis-headless.db.svc.cluster.local\tredis-0');
    expect(lines.slice(-3)).toEqual(['# Entries added by HostAliases.', '10.0.0.5\ta\tb', '']);
    expect(hostsFile({ metadata: { name: 'p' } }, '10.1.1.1')).toContain('\n10.1.1.1\tp\n');
  });

  it('names the host spec.hostname, else the pod, within 63 characters', () => {
    expect(podHostname({ metadata: { name: 'p' }, spec: { hostname: 'h', containers: [] } })).toBe('h');
    expect(podHostname({ metadata: { name: `${'a'.repeat(62)}-b` } })).toBe('a'.repeat(62));
  });

  const host =
    '# the node\nnameserver 10.0.0.2\nnameserver 10.0.0.3\nsearch example.com corp.\noptions edns0\n';
  const cluster = { nameservers: ['10.244.0.1'], domain: 'cluster.local' };
  const pod = (spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
    metadata: { name: 'p', namespace: 'db' },
    spec: { containers: [], ...spec },
  });
  const dnsConfig = {
    nameservers: ['10.0.0.9', '10.244.0.1'],
    searches: ['a.b', 'svc.cluster.local'],
    options: [{ name: 'ndots', value: '2' }, { name: 'single-request' }],
  };

  it("gives ClusterFirst pods (the default) the cluster DNS, kubelet's search path and ndots:5", () => {
    const want =
      'search db.svc.cluster.local svc.cluster.local cluster.local example.com corp\n' +
      'nameserver 10.244.0.1\n' +
      'options ndots:5\n';
    expect(resolvConf(pod(), host, cluster)).toBe(want);
    expect(resolvConf(pod({ dnsPolicy: 'ClusterFirst' }), host, cluster)).toBe(want);
    expect(resolvConf(pod({ dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true }), host, cluster)).toBe(
      want,
    );
    // dnsConfig is merged in: duplicates dropped, its options override ones of the same name.
    expect(resolvConf(pod({ dnsConfig }), host, cluster)).toBe(
      'search db.svc.cluster.local svc.cluster.local cluster.local example.com corp a.b\n' +
        'nameserver 10.244.0.1\nnameserver 10.0.0.9\n' +
        'options ndots:2 single-request\n',
    );
  });

  it("gives the node's resolver to Default pods, hostNetwork ClusterFirst pods, and all pods without a cluster DNS", () => {
    const node = 'search example.com corp\nnameserver 10.0.0.2\nnameserver 10.0.0.3\noptions edns0\n';
    expect(resolvConf(pod({ dnsPolicy: 'Default' }), host, cluster)).toBe(node);
    expect(resolvConf(pod({ hostNetwork: true }), host, cluster)).toBe(node);
    expect(resolvConf(pod(), host)).toBe(node);
    expect(resolvConf(pod({ dnsPolicy: 'Default', dnsConfig }), host, cluster)).toBe(
      'search example.com corp a.b svc.cluster.local\n' +
        'nameserver 10.0.0.2\nnameserver 10.0.0.3\nnameserver 10.0.0.9\n' +
        'options edns0 ndots:2 single-request\n',
    );
  });

  it('gives None pods only their dnsConfig', () => {
    expect(resolvConf(pod({ dnsPolicy: 'None', dnsConfig }), host, cluster)).toBe(
      'search a.b svc.cluster.local\nnameserver 10.0.0.9\nnameserver 10.244.0.1\noptions ndots:2 single-request\n',
    );
  });

  it("cuts to kubelet's limits: 3 nameservers, 32 search domains of at most 253 characters", () => {
    const many = pod({
      dnsPolicy: 'None',
      dnsConfig: {
        nameservers: ['1.1.1.1', '1.1.1.2', '1.1.1.3', '1.1.1.4'],
        searches: [`${'a'.repeat(254)}.x`, ...Array.from({ length: 40 }, (_, i) => `d${i}.example`)],
      },
    });
    const lines = resolvConf(many, host).split('\n');
    expect(lines.filter((l) => l.startsWith('nameserver'))).toHaveLength(3);
    expect(lines[0]?.split(' ').slice(1)).toEqual(Array.from({ length: 31 }, (_, i) => `d${i}.example`));
  });
});
