import type { CloudEvent } from 'cloudevents';
import { connectBus } from '../../shared/bus/connect.ts';
import { jetStreamPublisher } from '../../shared/bus/publisher.ts';
import { objectKeyOf } from '../../shared/events/subjects.ts';
import { objectLocks } from '../../shared/runtime/object-lock.ts';
import type { bed } from './bed.ts';

type Bed = ReturnType<typeof bed>;

/**
 * Publishes an event on the bus as a function does (an outcome the test builds with the
 * product's own builder); resolves to its stream sequence.
 */
export const publishEvent = async (b: Bed, event: CloudEvent<unknown>) => {
  const bus = await connectBus(b.info.natsUrl, 'e2e-publisher');
  try {
    return (await jetStreamPublisher(bus.js).publish(event)).seq;
  } finally {
    await bus.close();
  }
};

/**
 * Takes an object's lock as the functions do (every run that locks that key waits for it);
 * resolves to its release, which may be called more than once.
 */
export const holdLock = async (b: Bed, ref: { kind: string; namespace: string; name: string }) => {
  const bus = await connectBus(b.info.natsUrl, 'e2e-lock-holder');
  const locks = await objectLocks(bus, { owner: `e2e/${ref.namespace}` });
  const lease = await locks.acquire(objectKeyOf(ref), {});
  let released: Promise<void> | undefined;
  return () =>
    (released ??= (async () => {
      await lease.release();
      await locks.close();
      await bus.close();
    })());
};
