import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';

export type Bus = {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

/**
 * Connects with endless reconnects: NATS restarts are routine (the e2e suite kills it), and a
 * function that gave up on its bus would silently stop working.
 */
export const connectBus = async (servers: string, name: string): Promise<Bus> => {
  const nc = await connect({
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
    // Otherwise every request (each JetStream publish, ack-sync, KV write) builds two Errors up
    // front for their stack traces: ~20% of a busy function's CPU in the event-path bench.
    noAsyncTraces: true,
  });
  const js = jetstream(nc, { timeout: 10_000 });
  const jsm = await jetstreamManager(nc);
  const close = async () => {
    if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
  };
  return { nc, js, jsm, close, [Symbol.asyncDispose]: close };
};
