import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { RESTORE_STEPS } from '../desired.ts';

/** Waiting reasons of a container that will not start without someone acting. */
const STUCK = new Set([
  'CreateContainerConfigError',
  'CreateContainerError',
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
]);

const failureOf = (s: V1ContainerStatus): string | undefined => {
  const t = s.state?.terminated?.exitCode ? s.state.terminated : s.lastState?.terminated;
  if (t && t.exitCode !== 0)
    return (t.message ?? '').trim() || `exited with code ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}`;
  const w = s.state?.waiting;
  if (w?.reason && STUCK.has(w.reason)) return `${w.reason}${w.message ? `: ${w.message}` : ''}`;
  return undefined;
};

/**
 * Why the first member of a cluster made from a backup does not start, from its restore steps'
 * statuses: the fetch step's own `<Reason>: <message>` (a wrong checksum, a missing Secret, the
 * store refusing), etcdutl's exit, or a step that cannot even start (a Secret not mounted, an image
 * not found). Undefined while the steps run or once they have succeeded.
 */
export const restoreFailureOf = (pod: V1Pod | undefined): { step: string; message: string } | undefined => {
  for (const name of [RESTORE_STEPS.fetch, RESTORE_STEPS.restore]) {
    const s = pod?.status?.initContainerStatuses?.find((x) => x.name === name);
    if (!s || s.state?.terminated?.exitCode === 0) continue;
    const message = failureOf(s);
    if (message) return { step: name, message };
  }
  return undefined;
};

/** etcdutl's refusal of a data dir that holds a member already (3.5 and 3.6 say it alike). */
const DATA_DIR_NOT_EMPTY = /data-dir "[^"]*" not empty/;

/**
 * Whether the snapshot is in the first member's volume: `restored` when etcdutl finished;
 * `restoredBefore` when it refused a data dir that holds a member already — an earlier run of the
 * same steps restored it (the volume is this cluster's own, made for this member), the pod was
 * re-created or restarted before the cluster formed. Either way the member must start without the
 * steps from now on.
 */
export const restoredOf = (pod: V1Pod | undefined): 'restored' | 'restoredBefore' | undefined => {
  const s = pod?.status?.initContainerStatuses?.find((x) => x.name === RESTORE_STEPS.restore);
  if (!s) return undefined;
  // The refusal first: a pod whose steps ran once and then again (its sandbox restarted) shows
  // the earlier success as its last state and the refusal as its current one.
  const said = `${s.state?.terminated?.message ?? ''}\n${s.lastState?.terminated?.message ?? ''}`;
  if (DATA_DIR_NOT_EMPTY.test(said)) return 'restoredBefore';
  return s.state?.terminated?.exitCode === 0 || s.lastState?.terminated?.exitCode === 0
    ? 'restored'
    : undefined;
};
