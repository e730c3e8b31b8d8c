import { describe, expect, it } from 'vitest';
import type { EtcdCluster } from '../api/generated.ts';
import { joinOf, pdbFor, podFor, pvcFor, servicesFor } from './desired.ts';
import { imageOf, memberOfPeerURL } from './names.ts';

const c = (spec: Partial<EtcdCluster['spec']> = {}): EtcdCluster => ({
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'EtcdCluster',
  metadata: { name: 'main', namespace: 'prod', uid: 'u-1' },
  spec: { size: 3, version: '3.6', ...spec },
});

describe('an EtcdCluster’s objects', () => {
  it('gives each member a stable DNS name through the peers Service, findable before it is ready', () => {
    const pod = podFor(c(), 'main-etcd-1', {
      state: 'new',
      initialCluster: ['main-etcd-0', 'main-etcd-1', 'main-etcd-2'],
    });
    expect(pod.spec).toMatchObject({ hostname: 'main-etcd-1', subdomain: 'main-etcd-peers' });
    const args = pod.spec?.containers[0]?.args ?? [];
    expect(args).toContain('--initial-advertise-peer-urls=http://main-etcd-1.main-etcd-peers.prod.svc:2380');
    expect(args).toContain(
      '--initial-cluster=main-etcd-0=http://main-etcd-0.main-etcd-peers.prod.svc:2380,main-etcd-1=http://main-etcd-1.main-etcd-peers.prod.svc:2380,main-etcd-2=http://main-etcd-2.main-etcd-peers.prod.svc:2380',
    );
    expect(args).toContain('--initial-cluster-state=new');
    expect(args).toContain('--initial-cluster-token=main-u-1');
    const [client, peers] = servicesFor(c());
    expect(client?.metadata?.name).toBe('main-etcd');
    expect(peers?.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
    expect(memberOfPeerURL(c(), 'http://main-etcd-7.main-etcd-peers.prod.svc:2380')).toBe('main-etcd-7');
    expect(memberOfPeerURL(c(), 'http://main-etcd-7.other-etcd-peers.prod.svc:2380')).toBeUndefined();
  });

  it('with spec.tls: https peers and clients with client certificates required, each side on its own CA; probes stay http', () => {
    const join = { state: 'new' as const, initialCluster: ['main-etcd-0', 'main-etcd-1'] };
    const plain = podFor(c(), 'main-etcd-1', join);
    const pod = podFor(c({ tls: { peer: { secretName: 'my-peer' } } }), 'main-etcd-1', join);
    const args = pod.spec?.containers[0]?.args ?? [];
    expect(args).toEqual(
      expect.arrayContaining([
        '--listen-peer-urls=https://0.0.0.0:2380',
        '--listen-client-urls=https://0.0.0.0:2379',
        '--listen-metrics-urls=http://0.0.0.0:2381',
        '--advertise-client-urls=https://main-etcd-1.main-etcd-peers.prod.svc:2379',
        '--initial-cluster=main-etcd-0=https://main-etcd-0.main-etcd-peers.prod.svc:2380,main-etcd-1=https://main-etcd-1.main-etcd-peers.prod.svc:2380',
        '--client-cert-auth=true',
        '--peer-client-cert-auth=true',
        '--trusted-ca-file=/etc/etcd/tls/server/ca.crt',
        '--peer-trusted-ca-file=/etc/etcd/tls/peer/ca.crt',
      ]),
    );
    expect(pod.spec?.volumes).toEqual(
      expect.arrayContaining([
        { name: 'tls-peer', secret: { secretName: 'my-peer' } },
        { name: 'tls-server', secret: { secretName: 'main-etcd-server-tls' } },
      ]),
    );
    expect(pod.spec?.containers[0]?.readinessProbe).toEqual(plain.spec?.containers[0]?.readinessProbe);
    expect(joinOf(pod)).toEqual(join);
    // Without tls, nothing of it: a running cluster's pods stay as they are.
    expect(JSON.stringify(plain)).not.toMatch(/https|tls/);
  });

  it('reads back how a member pod joins from its flags', () => {
    const join = {
      state: 'existing' as const,
      initialCluster: ['main-etcd-0', 'main-etcd-2', 'main-etcd-3'],
    };
    expect(joinOf(podFor(c(), 'main-etcd-3', join))).toEqual(join);
    expect(joinOf({ spec: { containers: [{ name: 'etcd', args: [] }] } })).toBeUndefined();
  });

  it('keeps volumes out of the garbage collector’s reach, marked with the cluster they belong to', () => {
    const pvc = pvcFor(c({ storage: { size: '2Gi', storageClassName: 'fast' } }), 'main-etcd-0');
    expect(pvc.metadata?.ownerReferences).toBeUndefined();
    expect(pvc.metadata?.annotations).toEqual({ 'tideway.dev/owner-uid': 'u-1' });
    expect(pvc.spec).toMatchObject({ storageClassName: 'fast', resources: { requests: { storage: '2Gi' } } });
  });

  it('keeps a quorum of the desired size through voluntary disruptions', () => {
    expect(pdbFor(c({ size: 3 })).spec?.minAvailable).toBe(2);
    expect(pdbFor(c({ size: 5 })).spec?.minAvailable).toBe(3);
    expect(pdbFor(c({ size: 1 })).spec?.minAvailable).toBe(1);
    // Scaling 5 → 3 (or stuck above the size): the quorum of the members there are now.
    expect(pdbFor({ ...c({ size: 3 }), status: { size: 5 } }).spec?.minAvailable).toBe(3);
    // Three voters and a learner being added: four pods, of which three must stay (two voters).
    const adding = {
      size: 3,
      members: [
        { name: 'main-etcd-0' },
        { name: 'main-etcd-1' },
        { name: 'main-etcd-2' },
        { name: 'main-etcd-3', learner: true },
      ],
    };
    expect(pdbFor({ ...c({ size: 4 }), status: adding }).spec?.minAvailable).toBe(4);
    expect(pdbFor({ ...c({ size: 3 }), status: adding }).spec?.minAvailable).toBe(3);
  });

  it('runs the official image of the version, or the one given', () => {
    expect(imageOf(c({ version: '3.6' }))).toBe('gcr.io/etcd-development/etcd:v3.6.16');
    expect(imageOf(c({ version: '3.6.15' }))).toBe('gcr.io/etcd-development/etcd:v3.6.15');
    expect(imageOf(c({ version: '3.5' }))).toMatch(/^gcr\.io\/etcd-development\/etcd:v3\.5\.\d+$/);
    expect(imageOf(c({ image: 'mirror.local/etcd:v3.6.16' }))).toBe('mirror.local/etcd:v3.6.16');
  });

  it('starts the first member of a cluster made from a backup from its snapshot, as a one-member cluster of its own token', () => {
    const source = {
      backup: 'b1',
      store: { s3: { bucket: 'bk', credentialsSecret: { name: 's3-creds' } } },
      key: 'ns/_etcd/old/b1-1.db.zst.enc',
      sha256: 'a'.repeat(64),
      size: 10,
      dbSize: 20,
      compression: 'zstd' as const,
      encryptionSecret: 'backup-key',
    };
    const pod = podFor(
      c(),
      'main-etcd-0',
      { state: 'new', initialCluster: ['main-etcd-0'] },
      {
        source,
        tidewayImage: 'localhost/tideway:1',
      },
    );
    const [fetch, restore] = pod.spec?.initContainers ?? [];
    expect(fetch).toMatchObject({ name: 'fetch-backup', image: 'localhost/tideway:1' });
    expect(JSON.parse(fetch?.env?.find((e) => e.name === 'TIDEWAY_RESTORE_SOURCE')?.value ?? '')).toEqual(
      source,
    );
    // Each Secret mounted once, where the step reads it; nothing of theirs in the spec.
    expect(fetch?.volumeMounts?.map((m) => m.mountPath)).toEqual([
      '/restore',
      '/var/run/etcd',
      '/etc/tideway/secrets/s3-creds',
      '/etc/tideway/secrets/backup-key',
    ]);
    expect(restore?.image).toBe(imageOf(c()));
    expect(restore?.args).toEqual([
      'snapshot',
      'restore',
      '/restore/snapshot.db',
      '--data-dir=/var/run/etcd/data',
      '--name=main-etcd-0',
      '--initial-cluster=main-etcd-0=http://main-etcd-0.main-etcd-peers.prod.svc:2380',
      '--initial-cluster-token=main-u-1',
      '--initial-advertise-peer-urls=http://main-etcd-0.main-etcd-peers.prod.svc:2380',
    ]);
    // etcd then starts on what etcdutl wrote, with the same name and token.
    expect(pod.spec?.containers[0]?.args).toContain('--data-dir=/var/run/etcd/data');
    expect(pod.spec?.containers[0]?.args).toContain('--initial-cluster-token=main-u-1');
    expect(pod.spec?.volumes?.map((v) => v.name)).toEqual([
      'data',
      'restore',
      'restore-secret-0',
      'restore-secret-1',
    ]);
    // Optional: after the restore the steps read no Secret, and one gone since must not keep the
    // pod from starting again (its steps run again after a reboot).
    expect(
      pod.spec?.volumes?.filter((v) => v.secret).map((v) => [v.secret?.secretName, v.secret?.optional]),
    ).toEqual([
      ['s3-creds', true],
      ['backup-key', true],
    ]);
    // Every other pod has no such steps.
    expect(
      podFor(c(), 'main-etcd-1', { state: 'existing', initialCluster: [] }).spec?.initContainers,
    ).toBeUndefined();
  });
});
