import { describe, expect, it } from 'vitest';
import type { Cluster } from '../names.ts';
import { peerSans, requiredHosts, serverNameOf, serverSans, tlsSecretNames } from './sans.ts';

const c = (spec: Cluster['spec'] = {}): Cluster => ({ metadata: { name: 'main', namespace: 'prod' }, spec });

describe('TLS names of an EtcdCluster', () => {
  it('names the generated Secrets, or the ones given', () => {
    expect(tlsSecretNames(c({ tls: {} }))).toEqual({
      ca: 'main-etcd-ca',
      peer: 'main-etcd-peer-tls',
      server: 'main-etcd-server-tls',
      client: 'main-etcd-client-tls',
    });
    expect(
      tlsSecretNames(c({ tls: { peer: { secretName: 'p' }, client: { secretName: 'cl' } } })),
    ).toMatchObject({
      ca: 'main-etcd-ca',
      peer: 'p',
      server: 'main-etcd-server-tls',
      client: 'cl',
    });
  });

  it('lists the names members are reached by, short and fully qualified', () => {
    expect(serverNameOf(c())).toBe('main-etcd.prod.svc');
    expect(peerSans(c(), 'cluster.local')).toEqual({
      dns: [
        '*.main-etcd-peers.prod.svc',
        '*.main-etcd-peers.prod.svc.cluster.local',
        'main-etcd-peers.prod.svc',
      ],
      ips: [],
    });
    expect(serverSans(c(), 'k8s.example')).toEqual({
      dns: [
        '*.main-etcd-peers.prod.svc',
        '*.main-etcd-peers.prod.svc.k8s.example',
        'main-etcd.prod.svc',
        'main-etcd.prod.svc.k8s.example',
        'main-etcd.prod',
        'main-etcd',
        'localhost',
      ],
      ips: ['127.0.0.1'],
    });
  });

  it('requires of a given certificate any member’s name and the name it is verified by', () => {
    expect(requiredHosts(c(), 'peer')).toEqual(['x.main-etcd-peers.prod.svc', 'main-etcd-peers.prod.svc']);
    expect(requiredHosts(c(), 'server')).toEqual(['x.main-etcd-peers.prod.svc', 'main-etcd.prod.svc']);
    expect(requiredHosts(c(), 'client')).toEqual([]);
  });
});
