import type { ConsumerInfo, JetStreamManager } from '@nats-io/jetstream';
import { PARTITIONS, STREAM } from '../events/subjects.ts';

/**
 * The durable consumers a function reads the event stream through, by name, and what they hold.
 * Kept apart from ./consumer.ts so that the watcher (which serves the lag KEDA scales on) and the
 * chart's generator name them without loading the consumer runtime.
 */

export const consumerName = (fn: string, namespace?: string) =>
  namespace ? `fn-${fn}-ns-${namespace}` : `fn-${fn}`;

/** The durable consumer of one partition of a function's events (`consumerName` + `-p<n>`). */
export const partitionConsumerName = (base: string, partition: number) => `${base}-p${partition}`;

const partitionsOf = (base: string) =>
  Array.from({ length: PARTITIONS }, (_, p) => partitionConsumerName(base, p));

/** The durable consumers a function reads, one per partition. */
export const partitionConsumers = (fn: string, namespace?: string) =>
  partitionsOf(consumerName(fn, namespace));

export type Backlog = {
  /** Events not yet delivered to any replica. */
  pending: number;
  /** Delivered and not yet settled. */
  ackPending: number;
  /** Partitions whose consumer does not exist (yet: a function's first replica makes them). */
  missing: number;
};

type Held = Pick<ConsumerInfo, 'name' | 'num_pending' | 'num_ack_pending'>;

/** The backlog of the consumers named `base`-p<n> among `infos`; others are ignored. */
export const backlogOf = (base: string, infos: Iterable<Held>): Backlog => {
  const wanted = new Set(partitionsOf(base));
  let pending = 0;
  let ackPending = 0;
  for (const info of infos) {
    if (!wanted.delete(info.name)) continue;
    pending += info.num_pending;
    ackPending += info.num_ack_pending;
  }
  return { pending, ackPending, missing: wanted.size };
};

/** What a function's consumers hold, summed over its partitions: not yet delivered, and unacked. */
export const consumerBacklog = async (jsm: JetStreamManager, fn: string, namespace?: string) => {
  const infos: Held[] = [];
  for (const durable of partitionConsumers(fn, namespace)) {
    const info = await jsm.consumers.info(STREAM, durable).catch(() => undefined);
    if (info) infos.push(info);
  }
  return backlogOf(consumerName(fn, namespace), infos);
};

/** Deletes a function's consumers (a test's or a bench's own function). */
export const deleteConsumers = async (jsm: JetStreamManager, fn: string, namespace?: string) => {
  for (const durable of partitionConsumers(fn, namespace))
    await jsm.consumers.delete(STREAM, durable).catch(() => undefined);
};
