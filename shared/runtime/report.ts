import { CustomObjectsApi, EventsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type Condition, setCondition } from '../kube/conditions.ts';
import { isNotFound } from '../kube/errors.ts';
import { eventRecorder } from '../kube/events.ts';
import { type ResourceType, TIDEWAY_KINDS } from '../kube/resources.ts';
import { updateStatus } from '../kube/status.ts';
import type { FailureStatus } from './handler.ts';
import type { Logger } from './logger.ts';

export type FailureReport = {
  kind: string;
  namespace: string;
  name: string;
  /** The object the failed event was about: another object of the same name is not told. */
  uid?: string;
  conditionType: string;
  reason: string;
  message: string;
  /** The kinds whose status the report writes (the function's own); unset: every kind. */
  conditionKinds?: readonly string[];
};

/**
 * A function failed for good: say so on the object (condition False with the reason) and in a
 * Warning Event, so `kubectl describe` tells the user what went wrong. Best effort: the object
 * may be gone, and a failure to report must not turn into a retry loop.
 */
export const reportFailure = async (
  kc: KubeConfig,
  fn: string,
  r: FailureReport,
  log: Logger,
  failureStatus?: FailureStatus,
  kinds: Readonly<Record<string, ResourceType>> = TIDEWAY_KINDS,
): Promise<void> => {
  const type = kinds[r.kind];
  let uid = r.uid;
  if (type && (!r.conditionKinds || r.conditionKinds.includes(r.kind))) {
    try {
      const obj = await updateStatus(kc.makeApiClient(CustomObjectsApi), type, r, (o) => {
        if (r.uid && o.metadata?.uid !== r.uid) return undefined;
        const status = {
          ...o.status,
          conditions: setCondition(
            o.status?.conditions as Condition[] | undefined,
            { type: r.conditionType, status: 'False', reason: r.reason, message: r.message },
            o.metadata?.generation,
          ),
        };
        return failureStatus ? failureStatus(r, status) : status;
      });
      uid ??= obj?.metadata?.uid;
    } catch (error) {
      if (!isNotFound(error)) log.warn('could not write the failure condition', { error });
    }
  }
  await eventRecorder(
    kc.makeApiClient(EventsV1Api),
    `tideway.dev/${fn}`,
    process.env.HOSTNAME ?? `pid-${process.pid}`,
    (error) => log.warn('could not record the failure Event', { error }),
  ).record({
    regarding: {
      apiVersion: type ? `${type.group}/${type.version}` : 'v1',
      kind: r.kind,
      namespace: r.namespace,
      name: r.name,
      ...(uid ? { uid } : {}),
    },
    type: 'Warning',
    reason: r.reason,
    action: fn,
    note: r.message,
  });
};
