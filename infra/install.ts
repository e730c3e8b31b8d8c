import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { namespacedServiceAccount } from '../shared/runtime/identity.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const RBAC_DIR = join(root, 'infra', 'rbac');

/** Where Tideway's own objects live: the watcher's Lease, and later the operator's Secrets. */
export const SYSTEM_NAMESPACE = 'tideway-system';

/** A ClusterRoleBinding so annotated grants what no namespace holds: it stays cluster-wide. */
const SCOPE = 'tideway.dev/scope';
/** Marks what a namespaced installation made, by the namespace it serves. */
export const WATCH_NAMESPACE_LABEL = 'tideway.dev/watch-namespace';

// The ServiceAccount a function runs as in the installation for `namespace` (see namespacedRbac).
export { namespacedServiceAccount };

type Meta = {
  name: string;
  namespace?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
};
type Subject = { kind: string; name: string; namespace?: string };
type Rule = { apiGroups?: string[]; resources?: string[] };
export type RbacDoc = {
  apiVersion: string;
  kind: string;
  metadata: Meta;
  roleRef?: { apiGroup: string; kind: string; name: string };
  subjects?: Subject[];
  rules?: Rule[];
};

/** Resources no namespace holds among those a role of ours could name: a RoleBinding grants none. */
const CLUSTER_SCOPED = new Set([
  '/namespaces',
  '/nodes',
  '/persistentvolumes',
  'apiextensions.k8s.io/customresourcedefinitions',
  'rbac.authorization.k8s.io/clusterroles',
  'rbac.authorization.k8s.io/clusterrolebindings',
  'storage.k8s.io/storageclasses',
  'admissionregistration.k8s.io/validatingadmissionpolicies',
]);

/**
 * The RBAC of infra/rbac for an installation that serves only `namespaces` (each with its own
 * watcher and consumers, TIDEWAY_WATCH_NAMESPACE): per namespace, each function gets a
 * ServiceAccount of its own (`<name>-ns-<namespace>`, in tideway-system) whose ClusterRole is
 * bound by a RoleBinding in that namespace, so it can touch nothing elsewhere. The ClusterRoles
 * stay the one statement of each function's rights (alone they grant nothing); a RoleBinding in
 * tideway-system (the watcher's Lease) is repeated for the new account; a ClusterRoleBinding
 * annotated `tideway.dev/scope: cluster` (what no namespace holds, like reading kube-system's
 * uid) stays cluster-wide. A ClusterRole naming a cluster-scoped resource behind any other
 * ClusterRoleBinding is refused: a RoleBinding would drop that right without a word.
 */
export const namespacedRbac = (docs: readonly RbacDoc[], namespaces: readonly string[]): RbacDoc[] => {
  const roles = docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role');
  for (const d of docs) {
    if (d.kind !== 'ClusterRoleBinding' || d.metadata.annotations?.[SCOPE] === 'cluster') continue;
    const role = roles.find((r) => r.kind === 'ClusterRole' && r.metadata.name === d.roleRef?.name);
    const cluster = (role?.rules ?? []).flatMap((r) =>
      (r.apiGroups ?? []).flatMap((g) => (r.resources ?? []).map((res) => `${g}/${res}`)),
    );
    const lost = cluster.filter((c) => CLUSTER_SCOPED.has(c));
    if (lost.length > 0)
      throw new Error(
        `ClusterRole ${role?.metadata.name} grants ${lost.join(', ')}, which a RoleBinding cannot: move those rules to a ClusterRole whose ClusterRoleBinding is annotated ${SCOPE}: cluster`,
      );
  }
  const perNamespace = namespaces.flatMap((ns) => {
    const labels = { [WATCH_NAMESPACE_LABEL]: ns };
    const own = (name: string) => namespacedServiceAccount(name, ns);
    const subjects = (d: RbacDoc) =>
      (d.subjects ?? []).map((s) =>
        s.kind === 'ServiceAccount' && s.namespace === SYSTEM_NAMESPACE ? { ...s, name: own(s.name) } : s,
      );
    return docs.flatMap((d): RbacDoc[] => {
      const { annotations: _a, ...meta } = d.metadata;
      switch (d.kind) {
        case 'ServiceAccount':
          return [{ ...d, metadata: { ...meta, name: own(d.metadata.name), labels } }];
        case 'ClusterRoleBinding':
          return d.metadata.annotations?.[SCOPE] === 'cluster'
            ? [{ ...d, metadata: { name: own(d.metadata.name), labels }, subjects: subjects(d) }]
            : [
                {
                  apiVersion: d.apiVersion,
                  kind: 'RoleBinding',
                  metadata: { name: d.metadata.name, namespace: ns, labels },
                  ...(d.roleRef ? { roleRef: d.roleRef } : {}),
                  subjects: subjects(d),
                },
              ];
        case 'RoleBinding':
          return [{ ...d, metadata: { ...meta, name: own(d.metadata.name), labels }, subjects: subjects(d) }];
        default:
          return [];
      }
    });
  });
  return [...roles, ...perNamespace];
};

/** Every object of infra/rbac/*.yaml. */
const rbacDocs = async (): Promise<RbacDoc[]> => {
  const files = (await readdir(RBAC_DIR)).filter((f) => f.endsWith('.yaml')).sort();
  const docs: RbacDoc[] = [];
  for (const f of files)
    for (const doc of parseAllDocuments(await readFile(join(RBAC_DIR, f), 'utf8'))) {
      const value = doc.toJS() as RbacDoc | null;
      if (value) docs.push(value);
    }
  return docs;
};

/**
 * Installs Tideway's CRDs from crds/ (server-side apply: idempotent), its namespace and each
 * function's ServiceAccount and roles, and waits until the CRDs are served. Used by `npm start`
 * and by the e2e tests. With `namespaces`, the functions' rights are bound only in those
 * namespaces (namespacedRbac), for an installation whose functions watch one namespace each; no
 * ClusterRoleBinding of the cluster-wide installation is made (one that exists is left alone: the
 * two use different ServiceAccounts and can run side by side).
 */
export const installTideway = async (o: {
  kubectl: string;
  kubeconfig: string;
  fieldManager: string;
  namespaces?: readonly string[];
}) => {
  if (o.namespaces?.length === 0)
    throw new Error(
      'installTideway: namespaces is empty; name the namespaces to serve, or leave it out for all',
    );
  const env = { ...process.env, KUBECONFIG: o.kubeconfig };
  const run = (...args: string[]) => promisify(execFile)(o.kubectl, args, { env });
  const applyArgs = ['apply', '--server-side', '--force-conflicts', `--field-manager=${o.fieldManager}`];
  const apply = (dir: string) => run(...applyArgs, '-f', dir);
  const applyDocs = (items: readonly RbacDoc[]) =>
    new Promise<void>((ok, fail) => {
      const child = execFile(o.kubectl, [...applyArgs, '-f', '-'], { env }, (error, _out, stderr) =>
        error ? fail(Object.assign(error, { stderr })) : ok(),
      );
      child.stdin?.end(JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    });
  await apply(join(root, 'crds'));
  await run('create', 'namespace', SYSTEM_NAMESPACE).catch((e: { stderr?: string }) => {
    if (!e.stderr?.includes('AlreadyExists')) throw e;
  });
  // Each function's ServiceAccount and least-privilege roles (infra/rbac/<function>.yaml).
  if (o.namespaces) await applyDocs(namespacedRbac(await rbacDocs(), o.namespaces));
  else await apply(RBAC_DIR);
  await run(
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...['redisclusters', 'backups', 'backupschedules', 'restores'].map((p) => `crd/${p}.tideway.dev`),
  );
};
