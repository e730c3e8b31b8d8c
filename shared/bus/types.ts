import type { CloudEvent } from 'cloudevents';

/** Publishing side of the event bus. Resolves once the bus has durably stored the event. */
export type EventPublisher = {
  /** `duplicate` is true when the bus already had an event with this id (nothing new stored). */
  publish(event: CloudEvent<unknown>): Promise<{ duplicate: boolean; seq: number }>;
};
