import type { KubeHttp } from '../kube/lite/http.ts';

/** A function would act with an identity that is not its own, or with more rights than its roles. */
export class IdentityError extends Error {
  override readonly name = 'IdentityError';
  readonly retry = false;
}

/** The ServiceAccount a function runs as: one per function, its roles in infra/rbac/<fn>.yaml. */
export const serviceAccountOf = (fn: string) => `tideway-${fn}`;

/** Its name in a namespaced installation serving `namespace` (infra/install.ts, the chart). */
export const namespacedServiceAccount = (serviceAccount: string, namespace: string) =>
  `${serviceAccount}-ns-${namespace}`;

/** Why `username` is not a fit identity for `fn`, or undefined when it is. Pure. */
export const identityProblem = (
  fn: string,
  username: string,
  watchNamespace?: string,
): string | undefined => {
  const own = serviceAccountOf(fn);
  const fix = `run it as its own ServiceAccount ${own} with the roles of infra/rbac/${fn}.yaml (npm start and the Helm chart make both)`;
  const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(username);
  if (!m)
    return `function ${fn} authenticates as ${username || 'an unknown user'}, not as a ServiceAccount: ${fix}`;
  const allowed = [own, ...(watchNamespace ? [namespacedServiceAccount(own, watchNamespace)] : [])];
  if (!allowed.includes(m[2] ?? ''))
    return `function ${fn} runs as ServiceAccount ${m[1]}/${m[2]}, not its own (${allowed.join(' or ')}): ${fix}`;
  return undefined;
};

/**
 * Fail closed: before it acts, a function makes sure it is its own ServiceAccount and holds no
 * more than its roles (not cluster-admin, not an admin kubeconfig). What Kubernetes says, not
 * what a file claims: SelfSubjectReview for who, SelfSubjectAccessReview for "everything".
 */
export const checkIdentity = async (
  kube: KubeHttp,
  fn: string,
  o: { watchNamespace?: string | undefined } = {},
): Promise<string> => {
  const review = await kube.request<{ status?: { userInfo?: { username?: string } } }>(
    'POST',
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
  );
  const username = review.status?.userInfo?.username ?? '';
  const problem = identityProblem(fn, username, o.watchNamespace);
  if (problem) throw new IdentityError(problem);
  const everything = await kube.request<{ status?: { allowed?: boolean } }>(
    'POST',
    '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
    {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: { verb: '*', group: '*', resource: '*' } },
      },
    },
  );
  if (everything.status?.allowed)
    throw new IdentityError(
      `function ${fn} (${username}) may do anything in the cluster: bind it only the roles of infra/rbac/${fn}.yaml, never cluster-admin`,
    );
  return username;
};
