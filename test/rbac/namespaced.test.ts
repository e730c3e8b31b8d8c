import {
  AuthorizationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  installTideway,
  namespacedServiceAccount,
  SYSTEM_NAMESPACE,
  WATCH_NAMESPACE_LABEL,
} from '../../infra/install.ts';
import { serviceAccountOf, writeFunctionKubeconfig } from '../../infra/rbac/credentials.ts';
import { statusOf } from '../../shared/kube/errors.ts';
import { bed, createNamespace } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { spawnWorker, type Worker } from '../support/functions.ts';
import { redisClusters, refusals, SERVERLESS } from '../support/redis.ts';

type Ask = [verb: string, group: string, resource: string, subresource?: string];

/**
 * Issue 11 item 5: an installation that serves some namespaces binds each function's rights with
 * RoleBindings there, for ServiceAccounts of its own, so that its functions can touch nothing in
 * any other namespace — and those rights are enough to run a cluster.
 */
describe('a namespaced installation', () => {
  const b = bed();
  const admin = new KubeConfig();
  let served = '';
  let other = '';
  let workers: Worker[] = [];
  const rdc = redisClusters(b, () => served);
  /** The function's account in the installation for `served` (credentials name it `tideway-<fn>`). */
  const fnOf = (fn: string) => `${fn}-ns-${served}`;

  beforeAll(async () => {
    await installCrds(b.info);
    admin.loadFromFile(b.info.kubeconfig);
    served = await createNamespace(b.core, 'rbac-served');
    other = await createNamespace(b.core, 'rbac-other');
    await installTideway({
      kubectl: b.info.kubectl,
      kubeconfig: b.info.kubeconfig,
      fieldManager: 'tideway-tests',
      namespaces: [served],
    });
  });

  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    expect(refusals(workers)).toEqual([]);
    workers = [];
  });

  afterAll(async () => {
    for (const ns of [served, other]) await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    const selector = `${WATCH_NAMESPACE_LABEL}=${served}`;
    await b.kubectl('delete', 'serviceaccounts,rolebindings', '-n', SYSTEM_NAMESPACE, '-l', selector);
    await b.kubectl('delete', 'clusterrolebindings', '-l', selector);
  });

  const can = async (fn: string, [verb, group, resource, subresource]: Ask, namespace: string) => {
    const r = await admin.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${SYSTEM_NAMESPACE}:${serviceAccountOf(fnOf(fn))}`,
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

  it('binds each function in the namespace it serves, and nowhere else', async () => {
    expect(serviceAccountOf(fnOf('health'))).toBe(namespacedServiceAccount('tideway-health', served));
    const asks: Record<string, Ask[]> = {
      watcher: [
        ['watch', 'tideway.dev', 'redisclusters'],
        ['list', '', 'pods'],
      ],
      reconcile: [
        ['patch', 'apps', 'statefulsets'],
        ['create', '', 'secrets'],
        ['delete', '', 'pods'],
        ['update', 'tideway.dev', 'redisclusters', 'status'],
      ],
      health: [
        ['update', 'tideway.dev', 'redisclusters', 'status'],
        ['patch', '', 'pods'],
        ['get', '', 'secrets'],
      ],
    };
    const results = async (namespace: string) =>
      Object.fromEntries(
        await Promise.all(
          Object.entries(asks).flatMap(([fn, list]) =>
            list.map(async (a) => [`${fn} ${a.join(' ')}`, await can(fn, a, namespace)] as const),
          ),
        ),
      );
    const all = (v: boolean) =>
      Object.fromEntries(
        Object.entries(asks).flatMap(([fn, list]) => list.map((a) => [`${fn} ${a.join(' ')}`, v])),
      );
    expect(await results(served)).toEqual(all(true));
    expect(await results(other)).toEqual(all(false));
    // '' is every namespace at once: a list or watch across the cluster.
    expect(await results('')).toEqual(all(false));
    // What no namespace holds stays cluster-wide, and only that: kube-system's identity, the Lease.
    const identity = await admin.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${SYSTEM_NAMESPACE}:${serviceAccountOf(fnOf('watcher'))}`,
          resourceAttributes: { verb: 'get', resource: 'namespaces', name: 'kube-system' },
        },
      },
    });
    expect(identity.status?.allowed).toBe(true);
    expect(await can('watcher', ['update', 'coordination.k8s.io', 'leases'], SYSTEM_NAMESPACE)).toBe(true);
    expect(await can('watcher', ['update', 'coordination.k8s.io', 'leases'], other)).toBe(false);
  });

  it('runs a cluster in its namespace with those rights, and cannot touch another namespace', async () => {
    const dir = `${b.info.dir}/function-credentials/rbac-namespaced`;
    const kubeconfigs = Object.fromEntries(
      await Promise.all(
        ['watcher', 'reconcile', 'health'].map(
          async (fn) => [fn, await writeFunctionKubeconfig({ admin, fn: fnOf(fn), dir })] as const,
        ),
      ),
    );
    // The functions, each as its namespaced account, watching the namespace it serves.
    for (const fn of ['watcher', 'reconcile', 'health'])
      workers.push(
        spawnWorker(
          fn,
          {
            NATS_URL: b.info.natsUrl,
            TIDEWAY_WATCH_NAMESPACE: served,
            TIDEWAY_LEASE_DURATION: '5s',
            ...(fn === 'watcher' ? { TIDEWAY_WATCHER_ID: 'rbac-namespaced' } : {}),
            KUBECONFIG: kubeconfigs[fn] as string,
          },
          SERVERLESS,
        ),
      );
    await rdc.apply('scoped', { version: '7.0', replicas: 1 });
    expect((await rdc.ready('scoped', 120_000)).status?.master).toBe('scoped-0');

    // With the very token health runs with: its own namespace yes, another no.
    const own = new KubeConfig();
    own.loadFromFile(kubeconfigs.health as string);
    const core = own.makeApiClient(CoreV1Api);
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 200,
        (e: unknown) => statusOf(e),
      );
    expect(await code(core.listNamespacedPod({ namespace: served }))).toBe(200);
    expect(await code(core.listNamespacedPod({ namespace: other }))).toBe(403);
    expect(await code(core.readNamespacedSecret({ namespace: other, name: 'scoped-auth' }))).toBe(403);
    expect(
      await code(
        core.patchNamespacedPod(
          { namespace: other, name: 'scoped-0', body: { metadata: { labels: { x: 'y' } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
      ),
    ).toBe(403);
    expect(await code(core.listPodForAllNamespaces())).toBe(403);
  });
});
