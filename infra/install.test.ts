import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { namespacedRbac, type RbacDoc, SYSTEM_NAMESPACE } from './install.ts';

const dir = join(import.meta.dirname, 'rbac');
const docs = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as RbacDoc));

describe('namespacedRbac', () => {
  const out = namespacedRbac(docs, ['team-a', 'team-b']);

  it('binds every function only in the namespaces served, for accounts of their own', () => {
    const bindings = out.filter((d) => d.kind.endsWith('Binding'));
    for (const b of bindings) {
      for (const s of b.subjects ?? []) expect(s.name).toMatch(/-ns-team-[ab]$/);
      if (b.kind === 'RoleBinding')
        expect(['team-a', 'team-b', SYSTEM_NAMESPACE]).toContain(b.metadata.namespace);
    }
    // Cluster-wide only what no namespace holds (kube-system's identity), one per installation.
    expect(
      bindings
        .filter((b) => b.kind === 'ClusterRoleBinding')
        .map((b) => b.metadata.name)
        .sort(),
    ).toEqual(['tideway-watcher-cluster-id-ns-team-a', 'tideway-watcher-cluster-id-ns-team-b']);
    expect(
      out
        .filter((d) => d.kind === 'RoleBinding' && d.metadata.namespace === 'team-a')
        .map((d) => d.roleRef?.name),
    ).toEqual(
      docs
        .filter((d) => d.kind === 'ClusterRoleBinding' && !d.metadata.annotations?.['tideway.dev/scope'])
        .map((d) => d.roleRef?.name),
    );
    // No ServiceAccount of the cluster-wide installation.
    expect(
      out.filter((d) => d.kind === 'ServiceAccount').every((d) => /-ns-team-[ab]$/.test(d.metadata.name)),
    ).toBe(true);
  });

  it('refuses a ClusterRole whose cluster-scoped rights a RoleBinding would drop silently', () => {
    const role: RbacDoc = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'x' },
      rules: [{ apiGroups: [''], resources: ['pods', 'namespaces'] }],
    };
    const binding: RbacDoc = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'x' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'x' },
      subjects: [{ kind: 'ServiceAccount', name: 'tideway-x', namespace: SYSTEM_NAMESPACE }],
    };
    expect(() => namespacedRbac([role, binding], ['team-a'])).toThrow(/grants \/namespaces/);
    const kept = { ...binding, metadata: { name: 'x', annotations: { 'tideway.dev/scope': 'cluster' } } };
    expect(namespacedRbac([role, kept], ['team-a']).map((d) => `${d.kind} ${d.metadata.name}`)).toEqual([
      'ClusterRole x',
      'ClusterRoleBinding x-ns-team-a',
    ]);
  });
});
