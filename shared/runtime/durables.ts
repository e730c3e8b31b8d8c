import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
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

/** The consumer, or the whole stream, is not there: what a function's first replica makes. */
const notFound = (error: unknown) =>
  error instanceof JetStreamApiError &&
  (error.code === JetStreamApiCodes.ConsumerNotFound || error.code === JetStreamApiCodes.StreamNotFound);

/**
 * What the consumers named `base`-p<n> hold, summed over the partitions: one info request each,
 * at once. A consumer that is not there counts as missing; any other failure is thrown, never
 * read as an empty backlog.
 */
export const backlogOf = async (jsm: JetStreamManager, base: string): Promise<Backlog> => {
  const infos = await Promise.all(
    partitionsOf(base).map((durable) =>
      jsm.consumers.info(STREAM, durable).catch((error: unknown) => {
        if (notFound(error)) return undefined;
        throw error;
      }),
    ),
  );
  const backlog: Backlog = { pending: 0, ackPending: 0, missing: 0 };
  for (const info of infos) {
    if (!info) backlog.missing++;
    else {
      backlog.pending += info.num_pending;
      backlog.ackPending += info.num_ack_pending;
    }
  }
  return backlog;
};

/** What a function's consumers hold, summed over its partitions: not yet delivered, and unacked. */
export const consumerBacklog = (jsm: JetStreamManager, fn: string, namespace?: string) =>
  backlogOf(jsm, consumerName(fn, namespace));

/** Deletes a function's consumers (a test's or a bench's own function). */
export const deleteConsumers = async (jsm: JetStreamManager, fn: string, namespace?: string) => {
  for (const durable of partitionConsumers(fn, namespace))
    await jsm.consumers.delete(STREAM, durable).catch(() => undefined);
};
