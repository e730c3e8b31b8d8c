import { randomBytes } from 'node:crypto';
import { type EventsV1Api, V1MicroTime } from '@kubernetes/client-node';

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
