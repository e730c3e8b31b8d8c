import type { JetStreamClient } from '@nats-io/jetstream';
import type { CloudEvent } from 'cloudevents';
import { toBinaryMessage } from '../events/nats-binding.ts';
import { STREAM, subjectFor } from '../events/subjects.ts';
import type { EventPublisher } from './types.ts';

/** The event has no kind/namespace/name extensions, so it has no subject; a programming error. */
export class UnroutableEventError extends Error {
  override readonly name = 'UnroutableEventError';
  readonly retry = false;
}

/**
 * JetStream publisher: binary-mode CloudEvents, Nats-Msg-Id = event id (duplicates dropped by
 * the stream), expect the stream so a misconfigured subject fails instead of vanishing.
 */
export const jetStreamPublisher = (js: JetStreamClient): EventPublisher => ({
  publish: async (event) => {
    const ext = event as unknown as Record<string, unknown>;
    const [kind, namespace, name] = [ext.kind, ext.namespace, ext.name].map((v) =>
      typeof v === 'string' ? v : '',
    );
    if (!kind || !namespace || !name) {
      throw new UnroutableEventError(
        `event ${event.id} (${event.type}) lacks kind/namespace/name extensions`,
      );
    }
    const { headers, data } = toBinaryMessage(event as CloudEvent<unknown>);
    const ack = await js.publish(subjectFor(event.type, { kind, namespace, name }), data, {
      headers,
      msgID: event.id,
      expect: { streamName: STREAM },
    });
    return { duplicate: ack.duplicate, seq: ack.seq };
  },
});
