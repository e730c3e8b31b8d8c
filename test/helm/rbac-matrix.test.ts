import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CHART_DIR } from '../../infra/helm/generate.ts';
import { SYSTEM_NAMESPACE } from '../../infra/install.ts';
import { loadKubeConnection } from '../../shared/kube/lite/connection.ts';
import { kubeHttp } from '../../shared/kube/lite/http.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { loadServerless } from '../../shared/runtime/config.ts';
import { namespacedServiceAccount, serviceAccountOf } from '../../shared/runtime/identity.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { helm, type Manifest, sets } from './helm.ts';

const ROOT = join(CHART_DIR, '..', '..', '..');
const FUNCTIONS = Object.keys((await loadServerless(join(ROOT, 'serverless.yml'))).functions).sort();

type Rule = { apiGroups?: string[]; resources?: string[]; verbs?: string[]; resourceNames?: string[] };
type Doc = Manifest & {
  metadata: { annotations?: Record<string, string> };
  rules?: Rule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
};

/** What the role files say, read here on their own: the oracle the API server's verdicts must match. */
const ROLE_FILES = await Promise.all(
  FUNCTIONS.map(async (fn) => ({
    fn,
    docs: parseAllDocuments(await readFile(join(ROOT, 'infra', 'rbac', `${fn}.yaml`), 'utf8'))
      .map((d) => d.toJS() as Doc | null)
      .filter((d): d is Doc => d !== null),
  })),
);

/** A rule of a role file, where its binding makes it hold (undefined: every namespace and cluster-wide). */
type Grant = { rule: Rule; namespace: string | undefined; origin: string };
/** One request to authorize; namespace '' is cluster-wide (all namespaces, or a cluster-scoped object). */
type Ask = { verb: string; group: string; resource: string; sub?: string; name?: string; namespace: string };
/** A chart installation: its release namespace and, for watchNamespaces, the namespace an account serves. */
type Install = { release: string; namespace: string; served?: string };

/**
 * The rules bound to `fn`'s account, and where: a ClusterRoleBinding everywhere — or, in an
 * installation serving namespaces, in the served one only unless annotated tideway.dev/scope:
 * cluster (what no namespace holds; infra/install.ts namespacedRbac); a RoleBinding of tideway-system in the release's.
 */
const grantsOf = (fn: string, install: Install): Grant[] => {
  const all = ROLE_FILES.flatMap((f) => f.docs.map((d) => ({ file: f.fn, d })));
  return all.flatMap(({ d: binding }) => {
    if (binding.kind !== 'ClusterRoleBinding' && binding.kind !== 'RoleBinding') return [];
    const own = (s: { name: string; namespace?: string }) =>
      s.name === serviceAccountOf(fn) && s.namespace === SYSTEM_NAMESPACE;
    if (!binding.subjects?.some(own)) return [];
    const role = all.find(
      ({ d }) =>
        d.kind === binding.roleRef?.kind &&
        d.metadata.name === binding.roleRef.name &&
        (d.kind === 'ClusterRole' || d.metadata.namespace === binding.metadata.namespace),
    );
    if (!role) throw new Error(`${binding.kind} ${binding.metadata.name}: no role ${binding.roleRef?.name}`);
    const namespace =
      binding.kind === 'RoleBinding'
        ? binding.metadata.namespace === SYSTEM_NAMESPACE
          ? install.namespace
          : binding.metadata.namespace
        : binding.metadata.annotations?.['tideway.dev/scope'] === 'cluster'
          ? undefined
          : install.served;
    return (role.d.rules ?? []).map((rule, i) => ({
      rule,
      namespace,
      origin: `infra/rbac/${role.file}.yaml ${role.d.kind} ${role.d.metadata.name} rule ${i + 1}`,
    }));
  });
};

const path = (a: Ask) => (a.sub ? `${a.resource}/${a.sub}` : a.resource);
/** The grant that allows `ask` (no wildcards: the chart refuses a role file with one). */
const grantFor = (grants: readonly Grant[], a: Ask): Grant | undefined =>
  grants.find(
    ({ rule, namespace }) =>
      (namespace === undefined || namespace === a.namespace) &&
      rule.apiGroups?.includes(a.group) &&
      rule.resources?.includes(path(a)) &&
      rule.verbs?.includes(a.verb) &&
      (!rule.resourceNames?.length || (a.name !== undefined && rule.resourceNames.includes(a.name))),
  );
/** Every request one grant names: each group, resource, verb and resource name of its rule. */
const asksOf = ({ rule, namespace }: Grant): Ask[] =>
  (rule.apiGroups ?? []).flatMap((group) =>
    (rule.resources ?? []).flatMap((r) => {
      const [resource = '', sub] = r.split('/');
      return (rule.verbs ?? []).flatMap((verb) =>
        (rule.resourceNames?.length ? rule.resourceNames : [undefined]).map(
          (name): Ask => ({
            verb,
            group,
            resource,
            namespace: namespace ?? '',
            ...(sub ? { sub } : {}),
            ...(name ? { name } : {}),
          }),
        ),
      );
    }),
  );

const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
/** What the matrix asks every verb of: Tideway's kinds and their status, and what a cluster is made of. */
const RESOURCES: [group: string, resource: string, sub?: string][] = [
  ...Object.values(TIDEWAY_KINDS).flatMap((k): [string, string, string?][] => [
    [k.group, k.plural],
    [k.group, k.plural, 'status'],
  ]),
  ...['pods', 'services', 'secrets', 'configmaps', 'persistentvolumeclaims', 'events'].map(
    (r): [string, string] => ['', r],
  ),
  ['events.k8s.io', 'events'],
  ['apps', 'statefulsets'],
  ['policy', 'poddisruptionbudgets'],
  ['coordination.k8s.io', 'leases'],
];
/** What no function needs, anywhere: each would hand it more than its role (exec, escalation, …). */
const HOSTILE: (Omit<Ask, 'namespace'> & { clusterScoped?: boolean })[] = [
  { verb: 'list', group: '', resource: 'secrets' },
  { verb: 'watch', group: '', resource: 'secrets' },
  { verb: 'create', group: '', resource: 'pods', sub: 'exec' },
  { verb: 'get', group: '', resource: 'pods', sub: 'exec' },
  { verb: 'create', group: '', resource: 'pods', sub: 'portforward' },
  { verb: 'create', group: '', resource: 'serviceaccounts', sub: 'token' },
  { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'clusterroles', clusterScoped: true },
  {
    verb: 'create',
    group: 'rbac.authorization.k8s.io',
    resource: 'clusterrolebindings',
    clusterScoped: true,
  },
  { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'rolebindings' },
  { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'roles' },
  { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'clusterroles', clusterScoped: true },
  { verb: 'bind', group: 'rbac.authorization.k8s.io', resource: 'clusterroles', clusterScoped: true },
  { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'roles' },
  { verb: 'bind', group: 'rbac.authorization.k8s.io', resource: 'roles' },
  { verb: 'impersonate', group: '', resource: 'users', clusterScoped: true },
  { verb: 'impersonate', group: '', resource: 'groups', clusterScoped: true },
  { verb: 'impersonate', group: '', resource: 'serviceaccounts' },
  { verb: 'get', group: '', resource: 'nodes', sub: 'proxy', clusterScoped: true },
  { verb: 'create', group: '', resource: 'nodes', sub: 'proxy', clusterScoped: true },
  {
    verb: 'delete',
    group: 'apiextensions.k8s.io',
    resource: 'customresourcedefinitions',
    clusterScoped: true,
  },
  { verb: '*', group: '*', resource: '*' },
  { verb: '*', group: '', resource: 'pods' },
  { verb: 'get', group: '*', resource: '*' },
];

const mapLimit = async <T, R>(items: readonly T[], limit: number, f: (t: T) => Promise<R>): Promise<R[]> => {
  const out: R[] = [];
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await f(items[i] as T);
  };
  await Promise.all(Array.from({ length: limit }, lane));
  return out;
};

const where = (a: Ask) => (a.namespace ? `in ${a.namespace}` : 'cluster-wide');
const show = (a: Ask) =>
  `${a.verb} ${a.group ? `${a.group}/` : ''}${path(a)}${a.name ? ` ${a.name}` : ''} ${where(a)}`;
/** kubectl's spelling of a resource (`resource.group/name`) and of what --list prints. */
const kubectlResource = (a: Pick<Ask, 'group' | 'resource' | 'name'>) =>
  `${a.resource}${a.group ? `.${a.group}` : ''}${a.name ? `/${a.name}` : ''}`;
const listed = (a: Ask) =>
  `${a.verb} ${a.resource}${a.group ? `.${a.group}` : ''}${a.sub ? `/${a.sub}` : ''}${a.name ? ` ${a.name}` : ''}`;

/**
 * Issue 14: each function's ServiceAccount, as Tideway's chart makes it, may do what its
 * infra/rbac/<function>.yaml grants and nothing more — asked of the test bed's API server with
 * `kubectl auth can-i`, and by SubjectAccessReview for the full verb × resource matrix.
 */
describe("the chart's ServiceAccounts: the API server grants exactly infra/rbac (kubectl auth can-i)", () => {
  const b = bed();
  // Thousands of reviews: the lean client on one keep-alive agent, not client-node's models.
  const api = kubeHttp(loadKubeConnection({ KUBECONFIG: b.info.kubeconfig }));
  const id = Math.random().toString(36).slice(2, 7);
  const releases = { cluster: `rbacm-${id}`, namespaced: `rbacm-${id}-ns` };
  const ours = `app.kubernetes.io/instance in (${releases.cluster},${releases.namespaced})`;
  let clusterWide: Install = { release: releases.cluster, namespace: '' };
  let served: [string, string] = ['', ''];
  let namespaced: Install = { release: releases.namespaced, namespace: '' };
  /** Each installation's accounts, the namespaces to ask in, and whether to ask kubectl too. */
  const installs = () => [
    {
      mode: 'cluster-wide',
      install: clusterWide,
      scopes: ['', clusterWide.namespace, served[0]],
      kubectl: true,
    },
    ...served.map((s, i) => ({
      mode: 'serving namespaces',
      install: { ...namespaced, served: s },
      scopes: ['', namespaced.namespace, ...served],
      // The second namespace's accounts are the same objects again: reviews only.
      kubectl: i === 0,
    })),
  ];

  const userOf = (fn: string, install: Install) =>
    `system:serviceaccount:${install.namespace}:${
      install.served ? namespacedServiceAccount(serviceAccountOf(fn), install.served) : serviceAccountOf(fn)
    }`;
  /** SubjectAccessReview, with the groups the API server gives a ServiceAccount. */
  const sar = async (user: string, a: Ask) => {
    const ns = user.split(':')[2] ?? '';
    const r = await api.request<{ status?: { allowed?: boolean } }>(
      'POST',
      '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      {
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
            resourceAttributes: {
              verb: a.verb,
              group: a.group,
              resource: a.resource,
              subresource: a.sub,
              name: a.name,
              namespace: a.namespace,
            },
          },
        },
      },
    );
    return r.status?.allowed === true;
  };
  /** `kubectl auth can-i … --as=<account>`: yes or no, or a throw for anything else it says. */
  const canI = async (user: string, a: Ask): Promise<boolean> => {
    const args = ['auth', 'can-i', a.verb, a.resource === '*' ? '*' : kubectlResource(a), `--as=${user}`];
    if (a.sub) args.push(`--subresource=${a.sub}`);
    args.push(...(a.namespace ? ['-n', a.namespace] : ['-A']));
    try {
      return (await b.kubectl(...args)).trim() === 'yes';
    } catch (error) {
      const e = error as { code?: number; stdout?: string; stderr?: string };
      if (e.code === 1 && e.stdout?.trim().startsWith('no')) return false;
      throw new Error(`kubectl ${args.join(' ')}: ${e.stderr ?? String(error)}`);
    }
  };
  /** `kubectl auth can-i --list` in `namespace`: one entry per verb and resource (or URL) and name. */
  const list = async (user: string, namespace: string): Promise<string[]> => {
    const out = await b.kubectl('auth', 'can-i', '--list', '--no-headers', `--as=${user}`, '-n', namespace);
    const words = (s = '') => s.split(' ').filter(Boolean);
    const entries = out
      .split('\n')
      .filter((l) => l.trim())
      .flatMap((line) => {
        const m = /^(\S*)\s+\[([^\]]*)\]\s+\[([^\]]*)\]\s+\[([^\]]*)\]\s*$/.exec(line);
        if (!m) throw new Error(`kubectl auth can-i --list: cannot read "${line}"`);
        const [, resource, urls, names, verbs] = m;
        const targets = resource
          ? names
            ? words(names).map((n) => `${resource} ${n}`)
            : [resource]
          : words(urls);
        return targets.flatMap((t) => words(verbs).map((v) => `${v} ${t}`));
      });
    // Rules from several bindings (the defaults every account has) come out as several lines.
    return [...new Set(entries)].sort();
  };
  /** What any account of the namespace may do, bound to nothing of ours (it need not exist). */
  const baselines = new Map<string, Promise<string[]>>();
  const baseline = (install: Install, namespace: string) => {
    const key = `${install.namespace} ${namespace}`;
    if (!baselines.has(key))
      baselines.set(key, list(`system:serviceaccount:${install.namespace}:rbacm-nobody`, namespace));
    return baselines.get(key) as Promise<string[]>;
  };

  /**
   * The asks that kubectl or a review answers otherwise than `expected` (by default: as the role
   * files say), each with the rule that grants it or that none does.
   */
  const misjudged = async (
    user: string,
    grants: readonly Grant[],
    asks: readonly Ask[],
    via: 'kubectl' | 'review',
    expected = (a: Ask) => grantFor(grants, a) !== undefined,
  ) => {
    const verdicts = await mapLimit(asks, via === 'kubectl' ? 4 : 16, (a) =>
      via === 'kubectl' ? canI(user, a) : sar(user, a),
    );
    return asks.flatMap((a, i) => {
      if (verdicts[i] === expected(a)) return [];
      const g = grantFor(grants, a);
      return [
        `${show(a)}: ${verdicts[i] ? 'allowed' : 'refused'}; ${g ? `${g.origin} grants it` : 'no rule grants it'}`,
      ];
    });
  };

  /** The chart's RBAC objects for `install`; cluster-scoped ones renamed for this run only. */
  const renderRbac = async (install: Install, values: Record<string, string>) => {
    const r = await helm('template', install.release, CHART_DIR, '-n', install.namespace, ...sets(values));
    if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
    const kinds = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
    // The chart names them as infra/rbac does: the bed's own tideway-* (other tests') stay untouched.
    const own = (name: string) => `${name}-${install.release}`;
    return parseAllDocuments(r.stdout)
      .map((d) => d.toJS() as Doc | null)
      .filter((d): d is Doc => d !== null && kinds.includes(d.kind))
      .map((d) => ({
        ...d,
        metadata: {
          ...d.metadata,
          name: d.kind.startsWith('Cluster') ? own(d.metadata.name) : d.metadata.name,
        },
        ...(d.roleRef?.kind === 'ClusterRole'
          ? { roleRef: { ...d.roleRef, name: own(d.roleRef.name) } }
          : {}),
      }));
  };

  beforeAll(async () => {
    await installCrds(b.info);
    clusterWide = { ...clusterWide, namespace: await createNamespace(b.core, 'rbacm') };
    namespaced = { ...namespaced, namespace: await createNamespace(b.core, 'rbacm-ns') };
    served = [await createNamespace(b.core, 'rbacm-a'), await createNamespace(b.core, 'rbacm-b')];
    const objects = [
      ...(await renderRbac(clusterWide, {})),
      ...(await renderRbac(namespaced, { 'watchNamespaces[0]': served[0], 'watchNamespaces[1]': served[1] })),
    ];
    await b.kubectlIn(
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
      'apply',
      '--server-side',
      '--field-manager=rbac-matrix',
      '-f',
      '-',
    );
    // The authorizer learns of new bindings through its informers: wait until every grant holds.
    const positives = installs().flatMap(({ install }) =>
      FUNCTIONS.flatMap((fn) =>
        grantsOf(fn, install)
          .flatMap(asksOf)
          .map((a) => [userOf(fn, install), a] as const),
      ),
    );
    // A grant that never holds is not this wait's to report: the tests below name it and its rule.
    await until(
      'every granted right in force',
      async () => ((await mapLimit(positives, 16, ([u, a]) => sar(u, a))).every(Boolean) ? true : undefined),
      20_000,
    ).catch(() => undefined);
  });

  afterAll(async () => {
    for (const ns of [clusterWide.namespace, namespaced.namespace, ...served])
      if (ns) await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await b.kubectl('delete', 'clusterroles,clusterrolebindings', '-l', ours);
  });

  it('the chart makes one ServiceAccount per function and installation', async () => {
    const accounts = await b.kubectl(
      ...['get', 'serviceaccounts', '-A', '-l', ours, '-o'],
      'jsonpath={range .items[*]}{.metadata.namespace}:{.metadata.name}{"\\n"}{end}',
    );
    const expected = installs().flatMap(({ install }) =>
      FUNCTIONS.map((fn) => userOf(fn, install).replace('system:serviceaccount:', '')),
    );
    expect(accounts.trim().split('\n').sort()).toEqual(expected.sort());
  });

  describe.each(['cluster-wide', 'serving namespaces'])('%s', (mode) => {
    const each = () =>
      installs()
        .filter((i) => i.mode === mode)
        .map((i) => ({ ...i, grants: (fn: string) => grantsOf(fn, i.install) }));

    it.each(FUNCTIONS)(
      '%s: kubectl auth can-i --list is its role file, namespace by namespace',
      async (fn) => {
        for (const { install, scopes, grants } of each()) {
          for (const ns of scopes.filter(Boolean)) {
            const [got, base] = await Promise.all([list(userOf(fn, install), ns), baseline(install, ns)]);
            const granted = grants(fn)
              .filter((g) => g.namespace === undefined || g.namespace === ns)
              .flatMap(asksOf)
              .map(listed);
            expect(got, `${userOf(fn, install)} in ${ns}`).toEqual(
              [...new Set([...base, ...granted])].sort(),
            );
          }
        }
      },
    );

    it.each(FUNCTIONS)('%s: may do every rule of its role file, where it is bound', async (fn) => {
      for (const { install, kubectl, grants } of each()) {
        const user = userOf(fn, install);
        // kubectl auth can-i: the first verb, resource and name of each rule; reviews: all of them.
        const firsts = grants(fn).map((g) => asksOf(g)[0] as Ask);
        if (kubectl) expect(await misjudged(user, grants(fn), firsts, 'kubectl'), user).toEqual([]);
        const all = grants(fn).flatMap(asksOf);
        expect(await misjudged(user, grants(fn), all, 'review'), user).toEqual([]);
      }
    });

    it.each(FUNCTIONS)(
      '%s: is refused exec, escalation, impersonation, listing Secrets and wildcards',
      async (fn) => {
        for (const { install, scopes, kubectl, grants } of each()) {
          const user = userOf(fn, install);
          const asks = HOSTILE.flatMap(({ clusterScoped, ...h }) =>
            (clusterScoped ? [''] : scopes).map((namespace): Ask => ({ ...h, namespace })),
          );
          // kubectl auth can-i cluster-wide, or for a namespace's account in the other namespace.
          const far = install.served ? served.find((s) => s !== install.served) : '';
          const never = () => false;
          if (kubectl) {
            const farAway = asks.filter((a) => a.namespace === far);
            expect(await misjudged(user, grants(fn), farAway, 'kubectl', never), user).toEqual([]);
          }
          expect(await misjudged(user, grants(fn), asks, 'review', never), user).toEqual([]);
        }
      },
    );

    it.each(FUNCTIONS)(
      '%s: every verb on every resource, in every namespace, is as its role file says',
      async (fn) => {
        for (const { install, scopes, grants } of each()) {
          const asks = scopes.flatMap((namespace) =>
            RESOURCES.flatMap(([group, resource, sub]) =>
              VERBS.map((verb): Ask => ({ verb, group, resource, namespace, ...(sub ? { sub } : {}) })),
            ),
          );
          expect(await misjudged(userOf(fn, install), grants(fn), asks, 'review'), fn).toEqual([]);
        }
      },
    );
  });

  it.each(FUNCTIONS)(
    '%s, serving one namespace: what it may do there, it may not in the other or cluster-wide',
    async (fn) => {
      const [a, other] = served;
      const install = { ...namespaced, served: a };
      const user = userOf(fn, install);
      const grants = grantsOf(fn, install);
      // Its rules bound in its namespace (not the watcher's Lease, nor what tideway.dev/scope: cluster keeps).
      const local = grants.filter((g) => g.namespace === a);
      expect(local.length, `${fn} has rules bound in ${a}`).toBeGreaterThan(0);
      const elsewhere = (asks: readonly Ask[]) =>
        asks.flatMap((ask) => [other, ''].map((namespace) => ({ ...ask, namespace })));
      const never = () => false;
      const firsts = elsewhere(local.map((g) => asksOf(g)[0] as Ask));
      expect(await misjudged(user, grants, firsts, 'kubectl', never), user).toEqual([]);
      expect(await misjudged(user, grants, elsewhere(local.flatMap(asksOf)), 'review', never), user).toEqual(
        [],
      );
    },
  );

  it('reads Secrets only where shown: who may do what with one, cluster-wide', async () => {
    const verbs = ['get', 'create', 'patch', 'update', 'delete', 'list', 'watch'];
    const rights = async (fn: string, name?: string) => {
      const user = userOf(fn, clusterWide);
      const ok = await Promise.all(
        verbs.map((verb) =>
          canI(user, { verb, group: '', resource: 'secrets', namespace: '', ...(name ? { name } : {}) }),
        ),
      );
      return verbs.filter((_, i) => ok[i]).join(' ') || 'none';
    };
    const table = Object.fromEntries(
      await mapLimit(FUNCTIONS, 1, async (fn) => [fn, await rights(fn, 'any')]),
    );
    // Spelt out on purpose: a new right on Secrets is a change of this test, not only of a role file.
    expect(table).toEqual({
      backup: 'get', // a store's credentials and encryption key, the cluster's password: by name
      'etcd-reconcile': 'get create update', // spec.tls: the CA and certificate Secrets it makes and renews
      health: 'get', // the cluster's password
      reconcile: 'get create patch', // the password Secret it makes for a cluster
      restore: 'get',
      schedule: 'none',
      watcher: 'none',
      webhook: 'none', // only its own Secret, by name:
    });
    expect(await rights('webhook', 'tideway-webhook')).toBe('get');
  });
});
