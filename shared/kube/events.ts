import { randomBytes } from 'node:crypto';
import { EventsV1Api, type KubeConfig, V1MicroTime } from '@kubernetes/client-node';
import type { Logger } from '../runtime/logger.ts';

export type EventRecorder = {
  /** Records an events.k8s.io/v1 Event about the object; never throws (events are best effort). */
  record(e: {
    regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid?: string };
    type: 'Normal' | 'Warning';
    reason: string;
    action: string;
    note: string;
  }): Promise<void>;
};

export const eventRecorder = (
  api: EventsV1Api,
  controller: string,
  instance: string,
  /** Told of a failed record, to log: a refused Event (RBAC, quota) must not go unnoticed. */
  onError: (error: unknown) => void,
): EventRecorder => ({
  record: async ({ regarding, type, reason, action, note }) => {
    try {
      await api.createNamespacedEvent({
        namespace: regarding.namespace,
        body: {
          metadata: {
            name: `${regarding.name}.${randomBytes(6).toString('hex')}`,
            namespace: regarding.namespace,
          },
          // MicroTime: the API rejects eventTime without microseconds.
          eventTime: new V1MicroTime(),
          reportingController: controller,
          reportingInstance: instance,
          action,
          reason,
          type,
          // The API caps note at 1 KiB.
          note: note.length > 1024 ? `${note.slice(0, 1021)}...` : note,
          regarding,
        },
      });
    } catch (error) {
      onError(error);
    }
  },
});

/** What an Event is about. */
export type Regarding = Parameters<EventRecorder['record']>[0]['regarding'];

/** The recorder of a handler's run: Events from `tideway.dev/<name>`, a failed record logged. */
export const handlerRecorder = (
  ctx: { kube: KubeConfig; function: string; log: Pick<Logger, 'warn'> },
  name: string,
): EventRecorder =>
  eventRecorder(ctx.kube.makeApiClient(EventsV1Api), `tideway.dev/${name}`, ctx.function, (error) =>
    ctx.log.warn('event not recorded', { error }),
  );

/** `regarding` for a custom resource as read from the API server. */
export const regardingOf = (
  o: { apiVersion: string; kind: string; metadata: { name?: string; uid?: string } },
  namespace: string,
): Regarding => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  namespace,
  name: o.metadata.name ?? '',
  uid: o.metadata.uid ?? '',
});

/**
 * An Event about an object (a Backup, a Restore) and, with `cluster`, the same on the RedisCluster
 * it acts on: reason `<action><reason>`, note `<object name>: <note>` — what `kubectl describe` on
 * either shows.
 */
export const recordWithCluster = async (
  r: EventRecorder,
  o: { regarding: Regarding; cluster?: Regarding | undefined; action: string },
  e: { type: 'Normal' | 'Warning'; reason: string; note: string },
) => {
  await r.record({ regarding: o.regarding, action: o.action, ...e });
  if (o.cluster)
    await r.record({
      regarding: o.cluster,
      action: o.action,
      type: e.type,
      reason: `${o.action}${e.reason}`,
      note: `${o.regarding.name}: ${e.note}`,
    });
};
