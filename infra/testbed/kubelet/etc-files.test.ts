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

  it("gives the node's resolver (no cluster DNS here) plus dnsConfig; only dnsConfig for dnsPolicy None", () => {
    const host = 'nameserver 10.0.0.2\nsearch example.com\n';
    expect(resolvConf({}, host)).toBe(host);
    const dnsConfig = {
      nameservers: ['1.1.1.1'],
      searches: ['a.b'],
      options: [{ name: 'ndots', value: '2' }],
    };
    expect(resolvConf({ spec: { dnsConfig, containers: [] } }, host)).toBe(
      `${host}nameserver 1.1.1.1\nsearch a.b\noptions ndots:2\n`,
    );
    expect(resolvConf({ spec: { dnsPolicy: 'None', dnsConfig, containers: [] } }, host)).toBe(
      'nameserver 1.1.1.1\nsearch a.b\noptions ndots:2\n',
    );
  });
});
