import { DiscardPolicy, type JetStreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { STREAM, SUBJECT_ROOT } from '../events/subjects.ts';

const NS_PER_MS = 1_000_000;

export type StreamOptions = {
  /** JetStream drops a second publish with the same Nats-Msg-Id within this window. */
  duplicateWindowMs?: number;
  maxAgeMs?: number;
  maxBytes?: number;
  replicas?: number;
};

/**
 * Creates or updates the stream. Limits retention (not work-queue) because every function has
 * its own durable consumer over the same events; age and size bound the disk.
 */
export const ensureStream = async (jsm: JetStreamManager, o: StreamOptions = {}): Promise<void> => {
  const config = {
    name: STREAM,
    subjects: [`${SUBJECT_ROOT}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_age: (o.maxAgeMs ?? 7 * 24 * 3600_000) * NS_PER_MS,
    max_bytes: o.maxBytes ?? 1024 * 1024 * 1024,
    // Consumers are level-triggered: only an object's latest events matter, so a subject (one
    // object and event type) keeps its newest few. This bounds health ticks without a stream of
    // their own, and an object that changes 1,000 times while a function is down costs 10 events.
    max_msgs_per_subject: 10,
    duplicate_window: (o.duplicateWindowMs ?? 10 * 60_000) * NS_PER_MS,
    num_replicas: o.replicas ?? 1,
  };
  const existing = await jsm.streams.info(STREAM).catch(() => undefined);
  if (!existing) await jsm.streams.add(config);
  else await jsm.streams.update(STREAM, { ...existing.config, ...config });
};
