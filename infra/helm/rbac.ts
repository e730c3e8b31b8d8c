import { serviceAccountOf } from '../../shared/runtime/identity.ts';
import { namespacedRbac, type RbacDoc, SYSTEM_NAMESPACE } from '../install.ts';
import { WATCH_NAMESPACE } from './functions.ts';

/** Stands for the release's namespace, where infra/rbac says tideway-system. */
export const RELEASE_NAMESPACE = '__RELEASE_NAMESPACE__';

/** The label that ties an RBAC object to its function, so a disabled function has none. */
export const COMPONENT_LABEL = 'app.kubernetes.io/component';

/**
 * infra/rbac for the chart: `roles` always; `cluster` for a cluster-wide installation;
 * `namespaced` once per served namespace (WATCH_NAMESPACE in their names), made by
 * namespacedRbac, the rule `installTideway` follows.
 */
export type ChartRbac = { roles: RbacDoc[]; cluster: RbacDoc[]; namespaced: RbacDoc[] };

/** A function's rights as infra/rbac/<function>.yaml holds them. */
export type RbacFile = { fn: string; docs: RbacDoc[] };

/** A function without its account and rights would run with whatever the pod gets: refused. */
export class RbacError extends Error {
  override readonly name = 'RbacError';
  readonly retry = false;
}

const isRole = (d: RbacDoc) => d.kind === 'ClusterRole' || d.kind === 'Role';

type Rule = { apiGroups?: string[]; resources?: string[]; verbs?: string[] };

/** Rights no function of ours needs: everything, or the cluster's own admin roles. */
const tooMuch = (d: RbacDoc): string | undefined => {
  if (d.roleRef && ['cluster-admin', 'admin', 'edit'].includes(d.roleRef.name))
    return `binds ${d.roleRef.name}`;
  for (const r of (d.rules ?? []) as Rule[]) {
    if ([...(r.verbs ?? []), ...(r.apiGroups ?? []), ...(r.resources ?? [])].includes('*'))
      return 'grants a wildcard (*)';
  }
  return undefined;
};

const inRelease = (d: RbacDoc): RbacDoc => ({
  ...d,
  metadata: {
    ...d.metadata,
    ...(d.metadata.namespace === SYSTEM_NAMESPACE ? { namespace: RELEASE_NAMESPACE } : {}),
  },
  ...(d.subjects
    ? {
        subjects: d.subjects.map((s) =>
          s.namespace === SYSTEM_NAMESPACE ? { ...s, namespace: RELEASE_NAMESPACE } : s,
        ),
      }
    : {}),
});

const labelled =
  (fn: string) =>
  (d: RbacDoc): RbacDoc => ({
    ...d,
    metadata: { ...d.metadata, labels: { ...d.metadata.labels, [COMPONENT_LABEL]: fn } },
  });

export const chartRbac = (files: readonly RbacFile[], functions: readonly string[]): ChartRbac => {
  for (const fn of functions) {
    const file = files.find((f) => f.fn === fn);
    const sa = serviceAccountOf(fn);
    if (!file?.docs.some((d) => d.kind === 'ServiceAccount' && d.metadata.name === sa))
      throw new RbacError(
        `function ${fn} has no ServiceAccount ${sa} in infra/rbac/${fn}.yaml: every function runs with its own account and least-privilege roles`,
      );
  }
  // Its checks over every file at once (a binding may name another file's role).
  namespacedRbac(
    files.flatMap((f) => f.docs),
    [WATCH_NAMESPACE],
  );
  const out: ChartRbac = { roles: [], cluster: [], namespaced: [] };
  for (const { fn, docs } of files) {
    for (const d of docs) {
      const why = tooMuch(d);
      if (why) throw new RbacError(`infra/rbac/${fn}.yaml: ${d.kind} ${d.metadata.name} ${why}`);
    }
    const mark = labelled(fn);
    out.roles.push(...docs.filter(isRole).map(inRelease).map(mark));
    out.cluster.push(
      ...docs
        .filter((d) => !isRole(d))
        .map(inRelease)
        .map(mark),
    );
    out.namespaced.push(
      ...namespacedRbac(docs, [WATCH_NAMESPACE])
        .filter((d) => !isRole(d))
        .map(inRelease)
        .map(mark),
    );
  }
  return out;
};
