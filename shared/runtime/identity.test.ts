import { describe, expect, it } from 'vitest';
import { identityProblem } from './identity.ts';

describe('identityProblem', () => {
  it('accepts the function its own ServiceAccount, in a cluster-wide or a namespaced installation', () => {
    expect(identityProblem('health', 'system:serviceaccount:tideway-system:tideway-health')).toBe(undefined);
    expect(
      identityProblem('health', 'system:serviceaccount:tideway-system:tideway-health-ns-shop', 'shop'),
    ).toBe(undefined);
  });

  it("refuses a user, another function's account, and another namespace's installation", () => {
    expect(identityProblem('health', 'kubernetes-admin')).toContain('not as a ServiceAccount');
    expect(identityProblem('health', '')).toContain('an unknown user');
    expect(identityProblem('health', 'system:serviceaccount:tideway-system:tideway-reconcile')).toContain(
      'not its own',
    );
    expect(
      identityProblem('health', 'system:serviceaccount:tideway-system:tideway-health-ns-other', 'shop'),
    ).toContain('not its own');
    // Without a watched namespace, no namespaced account is its own.
    expect(
      identityProblem('health', 'system:serviceaccount:tideway-system:tideway-health-ns-shop'),
    ).toContain('infra/rbac/health.yaml');
  });
});
