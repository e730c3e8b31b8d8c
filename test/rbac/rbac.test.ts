import { readFileSync, writeFileSync } from 'node:fs';
import { AuthorizationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { SYSTEM_NAMESPACE } from '../../infra/install.ts';
import { keepTokensFresh, serviceAccountOf, writeFunctionKubeconfig } from '../../infra/rbac/credentials.ts';
import { statusOf } from '../../shared/kube/errors.ts';
import { loadKubeConnection } from '../../shared/kube/lite/connection.ts';
import { kubeHttp } from '../../shared/kube/lite/http.ts';
import { bed } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';

type Ask = [verb: string, group: string, resource: string, subresource?: string];

/**
 * Least privilege per function (infra/rbac): what each may do is what its code needs (the redis
 * e2e tests run every function as its ServiceAccount), and these are the things it must not do.
 */
describe('function RBAC', () => {
  const b = bed();
  const kc = new KubeConfig();
  let authz: AuthorizationV1Api;

  beforeAll(async () => {
    await installCrds(b.info);
    kc.loadFromFile(b.info.kubeconfig);
    authz = kc.makeApiClient(AuthorizationV1Api);
  });

  const can = async (fn: string, [verb, group, resource, subresource]: Ask, namespace = 'anywhere') => {
    const r = await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${SYSTEM_NAMESPACE}:${serviceAccountOf(fn)}`,
          groups: [
            'system:serviceaccounts',
            `system:serviceaccounts:${SYSTEM_NAMESPACE}`,
            'system:authenticated',
          ],
          resourceAttributes: { verb, group, resource, subresource, namespace },
        },
      },
    });
    return r.status?.allowed === true;
  };
  const check = async (fn: string, allowed: Ask[], denied: Ask[]) => {
    const result = async (asks: Ask[]) =>
      Object.fromEntries(await Promise.all(asks.map(async (a) => [a.join(' '), await can(fn, a)] as const)));
    expect(await result(allowed)).toEqual(Object.fromEntries(allowed.map((a) => [a.join(' '), true])));
    expect(await result(denied)).toEqual(Object.fromEntries(denied.map((a) => [a.join(' '), false])));
  };

  it('the watcher reads what it forwards and writes nothing but its Lease', async () => {
    await check(
      'watcher',
      [
        ['watch', 'tideway.dev', 'redisclusters'],
        ['list', 'tideway.dev', 'backupschedules'],
        ['watch', '', 'pods'],
      ],
      [
        ['patch', 'tideway.dev', 'redisclusters'],
        ['update', 'tideway.dev', 'redisclusters', 'status'],
        ['get', '', 'secrets'],
        ['create', '', 'pods'],
        ['delete', '', 'pods'],
        ['create', 'events.k8s.io', 'events'],
      ],
    );
    expect(await can('watcher', ['update', 'coordination.k8s.io', 'leases'], SYSTEM_NAMESPACE)).toBe(true);
    expect(await can('watcher', ['update', 'coordination.k8s.io', 'leases'], 'kube-system')).toBe(false);
  });

  it('reconcile manages a cluster’s objects but never deletes data or the cluster', async () => {
    await check(
      'reconcile',
      [
        ['patch', 'apps', 'statefulsets'],
        ['create', '', 'secrets'],
        ['delete', '', 'pods'],
        ['update', 'tideway.dev', 'redisclusters', 'status'],
        ['get', 'tideway.dev', 'backups'],
        ['create', 'tideway.dev', 'restores'],
      ],
      [
        ['delete', '', 'persistentvolumeclaims'],
        ['delete', '', 'persistentvolumes'],
        ['delete', 'tideway.dev', 'redisclusters'],
        ['update', 'tideway.dev', 'redisclusters'],
        // Status is written by compare-and-set (update with resourceVersion), never patched blind.
        ['patch', 'tideway.dev', 'redisclusters', 'status'],
        ['delete', '', 'secrets'],
        ['list', '', 'secrets'],
        // bootstrap.fromBackup reads its Backup and creates a Restore; it changes no Backup.
        ['create', 'tideway.dev', 'backups'],
        ['delete', 'tideway.dev', 'backups'],
        ['delete', 'tideway.dev', 'restores'],
        ['create', 'rbac.authorization.k8s.io', 'rolebindings'],
      ],
    );
  });

  it('etcd-reconcile makes members, reads the Backup a cluster starts from, and makes its TLS Secrets by name', async () => {
    await check(
      'etcd-reconcile',
      [
        ['create', '', 'pods'],
        ['delete', '', 'persistentvolumeclaims'],
        ['update', 'tideway.dev', 'etcdclusters', 'status'],
        ['get', 'tideway.dev', 'backups'],
        // spec.tls: CA and certificate Secrets, made, read and renewed by name.
        ['get', '', 'secrets'],
        ['create', '', 'secrets'],
        ['update', '', 'secrets'],
      ],
      [
        // Never a look at every Secret, nor a deletion (the garbage collector removes its own).
        ['list', '', 'secrets'],
        ['watch', '', 'secrets'],
        ['delete', '', 'secrets'],
        ['create', 'tideway.dev', 'backups'],
        ['patch', 'tideway.dev', 'backups'],
        ['delete', 'tideway.dev', 'etcdclusters'],
        ['patch', 'tideway.dev', 'etcdclusters', 'status'],
        ['get', 'tideway.dev', 'redisclusters'],
      ],
    );
  });

  it('backup reads either kind of cluster and changes none', async () => {
    await check(
      'backup',
      [
        ['get', 'tideway.dev', 'redisclusters'],
        ['get', 'tideway.dev', 'etcdclusters'],
        // A deleted Backup is kept while a new EtcdCluster starts from it.
        ['list', 'tideway.dev', 'etcdclusters'],
        ['list', '', 'pods'],
      ],
      [
        ['patch', 'tideway.dev', 'etcdclusters'],
        ['update', 'tideway.dev', 'etcdclusters', 'status'],
        ['delete', '', 'pods'],
        ['list', '', 'secrets'],
      ],
    );
  });

  it('health writes status and labels, and creates or deletes nothing', async () => {
    await check(
      'health',
      [
        ['update', 'tideway.dev', 'redisclusters', 'status'],
        ['patch', '', 'pods'],
        ['get', '', 'secrets'],
      ],
      [
        ['delete', '', 'pods'],
        ['create', '', 'pods'],
        ['patch', 'apps', 'statefulsets'],
        ['patch', 'tideway.dev', 'redisclusters'],
        ['patch', 'tideway.dev', 'redisclusters', 'status'],
        ['list', '', 'secrets'],
        ['create', '', 'secrets'],
      ],
    );
  });

  it('hands a function a token for its ServiceAccount that the API server enforces', async () => {
    const file = await writeFunctionKubeconfig({ admin: kc, fn: 'watcher', dir: `${b.info.dir}/rbac-test` });
    const own = new KubeConfig();
    own.loadFromFile(file);
    const core = own.makeApiClient(CoreV1Api);
    expect((await core.readNamespace({ name: 'kube-system' })).metadata?.name).toBe('kube-system');
    const denied = await core.listNamespacedSecret({ namespace: 'default' }).then(
      () => 200,
      (e: unknown) => statusOf(e),
    );
    expect(denied).toBe(403);
  });

  it('renews a token under a running client, which reads it from its file', async () => {
    const dir = `${b.info.dir}/rbac-renew`;
    const file = await writeFunctionKubeconfig({ admin: kc, fn: 'watcher', dir });
    const lite = kubeHttp(loadKubeConnection({ KUBECONFIG: file }));
    const get = () =>
      lite.request<{ metadata: { name: string } }>('GET', '/api/v1/namespaces/kube-system').then(
        (r) => r.metadata.name,
        (e: unknown) => statusOf(e),
      );
    const own = new KubeConfig();
    own.loadFromFile(file);
    expect((await own.makeApiClient(CoreV1Api).readNamespace({ name: 'kube-system' })).metadata?.name).toBe(
      'kube-system',
    );
    expect(await get()).toBe('kube-system');

    // As if it expired: the running client notices at its next request...
    const tokenFile = `${dir}/watcher.token`;
    const first = readFileSync(tokenFile, 'utf8');
    writeFileSync(tokenFile, 'expired');
    expect(await get()).toBe(401);

    // ...and works again once the token is renewed, without being restarted.
    const fresh = keepTokensFresh({
      admin: kc,
      fns: ['watcher'],
      dir,
      onError: (_fn, e) => expect.fail(String(e)),
    });
    await fresh.renew();
    await fresh.stop();
    expect(readFileSync(tokenFile, 'utf8')).not.toBe(first);
    expect(await get()).toBe('kube-system');
  });
});
