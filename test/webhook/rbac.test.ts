import { AuthorizationV1Api, KubeConfig } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { SYSTEM_NAMESPACE } from '../../infra/install.ts';
import { serviceAccountOf } from '../../infra/rbac/credentials.ts';
import { bed } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';

type Ask = { verb: string; group: string; resource: string; subresource?: string; name?: string };

/**
 * The webhook's role (infra/rbac/webhook.yaml) is what its code needs (test/webhook/webhook.test.ts
 * runs it as this ServiceAccount and finds no refusal), and nothing more: it reads one Secret by
 * name, creates intents, and changes nothing that exists.
 */
describe('webhook RBAC', () => {
  const b = bed();
  let authz: AuthorizationV1Api;

  beforeAll(async () => {
    await installCrds(b.info);
    const kc = new KubeConfig();
    kc.loadFromFile(b.info.kubeconfig);
    authz = kc.makeApiClient(AuthorizationV1Api);
  });

  const can = async (a: Ask, namespace = 'anywhere') => {
    const r = await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${SYSTEM_NAMESPACE}:${serviceAccountOf('webhook')}`,
          groups: [
            'system:serviceaccounts',
            `system:serviceaccounts:${SYSTEM_NAMESPACE}`,
            'system:authenticated',
          ],
          resourceAttributes: { ...a, namespace },
        },
      },
    });
    return r.status?.allowed === true;
  };
  const label = (a: Ask) => [a.verb, a.group, a.resource, a.subresource, a.name].filter(Boolean).join(' ');

  it('may read its Secret, the clusters, and read and create Restores and Backups', async () => {
    const allowed: Ask[] = [
      { verb: 'get', group: '', resource: 'secrets', name: 'tideway-webhook' },
      { verb: 'get', group: 'tideway.dev', resource: 'redisclusters' },
      { verb: 'get', group: 'tideway.dev', resource: 'restores' },
      { verb: 'list', group: 'tideway.dev', resource: 'restores' },
      { verb: 'create', group: 'tideway.dev', resource: 'restores' },
      { verb: 'get', group: 'tideway.dev', resource: 'backups' },
      { verb: 'list', group: 'tideway.dev', resource: 'backups' },
      { verb: 'create', group: 'tideway.dev', resource: 'backups' },
    ];
    const result = await Promise.all(allowed.map(async (a) => [label(a), await can(a)] as const));
    expect(Object.fromEntries(result)).toEqual(Object.fromEntries(allowed.map((a) => [label(a), true])));
  });

  it('may not read other Secrets, list Secrets, or change or delete anything', async () => {
    const denied: Ask[] = [
      { verb: 'get', group: '', resource: 'secrets', name: 'cache-auth' },
      { verb: 'get', group: '', resource: 'secrets' },
      { verb: 'list', group: '', resource: 'secrets' },
      { verb: 'watch', group: '', resource: 'secrets' },
      { verb: 'update', group: '', resource: 'secrets', name: 'tideway-webhook' },
      { verb: 'create', group: '', resource: 'secrets' },
      { verb: 'update', group: 'tideway.dev', resource: 'restores' },
      { verb: 'patch', group: 'tideway.dev', resource: 'restores' },
      { verb: 'delete', group: 'tideway.dev', resource: 'restores' },
      { verb: 'update', group: 'tideway.dev', resource: 'restores', subresource: 'status' },
      { verb: 'delete', group: 'tideway.dev', resource: 'backups' },
      { verb: 'update', group: 'tideway.dev', resource: 'backups', subresource: 'status' },
      { verb: 'list', group: 'tideway.dev', resource: 'redisclusters' },
      { verb: 'patch', group: 'tideway.dev', resource: 'redisclusters' },
      { verb: 'create', group: 'tideway.dev', resource: 'redisclusters' },
      { verb: 'create', group: 'tideway.dev', resource: 'backupschedules' },
      { verb: 'get', group: '', resource: 'pods' },
      { verb: 'create', group: '', resource: 'pods', subresource: 'exec' },
      { verb: 'create', group: 'events.k8s.io', resource: 'events' },
      { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'rolebindings' },
    ];
    const result = await Promise.all(denied.map(async (a) => [label(a), await can(a)] as const));
    expect(Object.fromEntries(result)).toEqual(Object.fromEntries(denied.map((a) => [label(a), false])));
  });
});
