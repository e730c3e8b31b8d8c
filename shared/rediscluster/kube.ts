import { randomBytes } from 'node:crypto';
import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
  type V1Secret,
} from '@kubernetes/client-node';
import type { RedisCluster } from '../api/generated.ts';
import { isAlreadyExists, isNotFound } from '../kube/errors.ts';
import { controlledBy, OwnershipConflict } from '../kube/ownership.ts';
import { TemporaryError, TerminalError } from '../runtime/handler.ts';
import type { Auth } from './auth.ts';
import { generatedAuthSecretFor } from './desired.ts';
import { LABEL, namesOf, type Role, selectorLabels } from './names.ts';

/** Every pod that carries the cluster's labels (what its Services select). */
export const listLabelledPods = async (kc: KubeConfig, rc: RedisCluster): Promise<V1Pod[]> => {
  const n = namesOf(rc);
  const selector = Object.entries(selectorLabels(n.name))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return (
    await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: n.namespace, labelSelector: selector })
  ).items;
};

/**
 * Labelled pods split into the cluster's own — as its StatefulSet made them: labels alone are not
 * proof (anyone can label a pod), the controller reference to the StatefulSet is; with
 * `statefulSetUid`, to that very one — and the others, which the cluster's Services select all
 * the same.
 */
export const splitPods = (
  rc: RedisCluster,
  labelled: readonly V1Pod[],
  statefulSetUid?: string,
): { pods: V1Pod[]; foreign: V1Pod[] } => {
  const n = namesOf(rc);
  const ours = (p: V1Pod) =>
    (p.metadata?.ownerReferences ?? []).some(
      (r) =>
        r.controller === true &&
        r.kind === 'StatefulSet' &&
        r.name === n.statefulSet &&
        (statefulSetUid === undefined || r.uid === statefulSetUid),
    );
  return { pods: labelled.filter(ours), foreign: labelled.filter((p) => !ours(p)) };
};

/** The cluster's own pods (splitPods). */
export const listPods = async (kc: KubeConfig, rc: RedisCluster, statefulSetUid?: string): Promise<V1Pod[]> =>
  splitPods(rc, await listLabelledPods(kc, rc), statefulSetUid).pods;

/**
 * The cluster's password, from its Secret (key `password`). A generated Secret is created on
 * first use; a user-named one that is missing is the user's to create: wait for it.
 */
export const readPassword = async (kc: KubeConfig, rc: RedisCluster, create: boolean): Promise<string> => {
  const core = kc.makeApiClient(CoreV1Api);
  const n = namesOf(rc);
  const read = async () => {
    const s = await core.readNamespacedSecret({ namespace: n.namespace, name: n.authSecret });
    // A generated Secret is ours; one by that name that is not is someone else's: never use it.
    if (n.generatedAuthSecret && !controlledBy(s, rc.metadata.uid ?? ''))
      throw new OwnershipConflict(
        `Secret ${n.authSecret} already exists and is not managed by this cluster; Tideway neither uses nor changes it. Name the password Secret in spec.auth.secretName, or rename the cluster`,
      );
    const b64 = s.data?.password;
    if (!b64) throw new TerminalError('AuthSecretInvalid', `Secret ${n.authSecret} has no key "password"`);
    return Buffer.from(b64, 'base64').toString();
  };
  try {
    return await read();
  } catch (error) {
    if (!isNotFound(error)) throw error;
    if (!n.generatedAuthSecret || !create)
      throw new TemporaryError(
        'AuthSecretMissing',
        `Secret ${n.authSecret} (spec.auth.secretName) does not exist yet`,
        10_000,
      );
  }
  try {
    await core.createNamespacedSecret({
      namespace: n.namespace,
      body: generatedAuthSecretFor(rc, randomBytes(24).toString('base64url')),
    });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  return read();
};

/**
 * The cluster's passwords: the wanted one (readPassword) and Tideway's record of what the
 * instances accept (the auth-conf Secret, when it is this cluster's).
 */
export const readAuth = async (kc: KubeConfig, rc: RedisCluster, create: boolean): Promise<Auth> => {
  const desired = await readPassword(kc, rc, create);
  const n = namesOf(rc);
  let record: V1Secret | undefined;
  try {
    record = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace: n.namespace, name: n.authConfSecret });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const data = controlledBy(record, rc.metadata.uid ?? '') ? (record?.data ?? {}) : {};
  const decode = (b64: string | undefined) =>
    b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString();
  const previous = decode(data.previous);
  // A record written before it kept the password (or none yet): the instances run with `desired`.
  return {
    desired,
    applied: decode(data.password) ?? desired,
    ...(previous === undefined ? {} : { previous }),
  };
};

/** Sets (or removes) the role label of one pod; the Services follow it. */
export const labelPod = async (kc: KubeConfig, namespace: string, pod: string, role: Role | null) => {
  await kc.makeApiClient(CoreV1Api).patchNamespacedPod(
    { namespace, name: pod, body: { metadata: { labels: { [LABEL.role]: role } } } },
    // A JSON merge patch: null removes the label.
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
};
