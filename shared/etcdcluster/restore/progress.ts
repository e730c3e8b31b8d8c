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
