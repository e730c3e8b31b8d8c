import { AckPolicy, DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import type { CloudEvent } from 'cloudevents';
import type { Bus } from '../bus/connect.ts';
import { fromMessage } from '../events/nats-binding.ts';
import { filterSubject, objectKeyOf, STREAM } from '../events/subjects.ts';
import { backoffMs } from './backoff.ts';
import { type FunctionConfig, toMs } from './config.ts';
import { type Deps, type Handler, LockLostError, type Outcome, toOutcome } from './handler.ts';
import { keyedScheduler } from './keyed-scheduler.ts';
import type { ObjectLocks } from './object-lock.ts';
import { reportFailure } from './report.ts';

export type ConsumerOptions = {
  bus: Bus;
  name: string;
  fn: FunctionConfig;
  handler: Handler;
  deps: Deps;
  locks: ObjectLocks;
  /**
   * Only this namespace's events (TIDEWAY_WATCH_NAMESPACE), on a durable consumer of its own: an
   * installation scoped to one namespace never sees, nor takes, another's work.
   */
  namespace?: string;
  /** A handler that ignores cancellation this long past its timeout makes the process exit. */
  stuckGraceMs?: number;
  onStuck?: () => void;
};

export type RunningConsumer = { stop(drainMs?: number): Promise<void> };

const NS = 1_000_000;
const ext = (event: CloudEvent<unknown>, name: string) => {
  const v = (event as unknown as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : '';
};

/** Resource events coalesce (handlers re-read the object); ticks and outcomes queue per type. */
const coalesceClass = (type: string) => (type.startsWith('dev.tideway.resource.') ? 'resource' : type);

export const consumerName = (fn: string, namespace?: string) =>
  namespace ? `fn-${fn}-ns-${namespace}` : `fn-${fn}`;

/**
 * Runs one function over its durable consumer. Per object: one handler at a time in this process
 * (keyed scheduler) and across replicas (object lock). Outcomes: done → ack, retry → nak(delay),
 * terminal or retries exhausted → condition + Event + term. Invalid messages are termed.
 */
export const startConsumer = async (o: ConsumerOptions): Promise<RunningConsumer> => {
  const { bus, name, fn, deps } = o;
  const log = deps.log.child({ function: name });
  const timeoutMs = fn.timeout * 1000;
  const ackWaitMs = Math.max(30_000, Math.min(timeoutMs, 120_000));
  const filters = [
    ...new Set(fn.events.map((e) => filterSubject(e.cloudevent.type, e.cloudevent.kind, o.namespace))),
  ];
  const durable = consumerName(name, o.namespace);
  const config = {
    durable_name: durable,
    filter_subjects: filters,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: ackWaitMs * NS,
    // We count attempts ourselves so exhaustion is reported, never a silent stop of redelivery.
    max_deliver: -1,
    // Bounds what one function holds unacked, hence the memory of every replica.
    max_ack_pending: Math.max(256, fn.reservedConcurrency * 64),
  };
  const existing = await bus.jsm.consumers.info(STREAM, durable).catch(() => undefined);
  if (existing) await bus.jsm.consumers.update(STREAM, durable, { ...existing.config, ...config });
  else await bus.jsm.consumers.add(STREAM, config);

  const scheduler = keyedScheduler(fn.reservedConcurrency);
  const shutdown = new AbortController();
  const m = deps.metrics;
  const labels = { function: name };

  const settle = async (msg: JsMsg, outcome: Outcome, event: CloudEvent<unknown>, attempt: number) => {
    const elog = log.child({
      event: event.id,
      object: `${ext(event, 'namespace')}/${ext(event, 'name')}`,
      kind: ext(event, 'kind'),
    });
    if (outcome.kind === 'done') {
      await msg.ackAck().catch((error) => elog.warn('ack failed; the event will be redelivered', { error }));
      m.inc('tideway_events_handled_total', { ...labels, outcome: 'done' });
      return;
    }
    const exhausted = outcome.kind === 'retry' && attempt >= fn.maximumRetryAttempts;
    if (outcome.kind === 'retry' && !exhausted) {
      const delay =
        outcome.afterMs >= 0
          ? outcome.afterMs
          : backoffMs(attempt, toMs(fn.tideway.initialDelay), toMs(fn.tideway.maxDelay));
      elog.info('retrying later', { attempt, delayMs: delay, reason: outcome.reason });
      msg.nak(delay);
      m.inc('tideway_events_handled_total', { ...labels, outcome: 'retry' });
      return;
    }
    const [reason, message] =
      outcome.kind === 'terminal'
        ? [outcome.reason, outcome.message]
        : ['RetriesExhausted', `gave up after ${attempt} attempts: ${outcome.reason}`];
    elog.error('failed for good', { attempt, reason, message });
    await reportFailure(
      deps.kube,
      name,
      {
        kind: ext(event, 'kind'),
        namespace: ext(event, 'namespace'),
        name: ext(event, 'name'),
        conditionType: fn.tideway.failureCondition,
        reason,
        message,
      },
      elog,
    );
    msg.term(`${reason}: ${message}`.slice(0, 200));
    m.inc('tideway_events_handled_total', { ...labels, outcome: exhausted ? 'exhausted' : 'terminal' });
  };

  const handle = async (msg: JsMsg, event: CloudEvent<unknown>, key: string) => {
    const attempt = msg.info.deliveryCount;
    const lease = await o.locks.acquire(key, { signal: shutdown.signal, onWait: () => msg.working() });
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([timeout, lease.lost, shutdown.signal]);
    // Keep the message ours while the handler runs longer than ack_wait/3.
    const heartbeat = setInterval(() => msg.working(), ackWaitMs / 3);
    const started = performance.now();
    let stuck: NodeJS.Timeout | undefined;
    try {
      const run = o.handler(event, {
        ...deps,
        log: log.child({ event: event.id, object: key }),
        function: name,
        attempt,
        maxAttempts: fn.maximumRetryAttempts,
        signal,
        fence: () => {
          if (!lease.held())
            throw new LockLostError(`lost the lock of ${key}; not acting on a stale decision`);
          if (signal.aborted) throw signal.reason;
        },
        lockToken: () => lease.token(),
      });
      // The lock is held until the handler really ends, even past its timeout: releasing it early
      // would let another replica work on the same object at the same time.
      const watchdog = () => {
        stuck = setTimeout(() => {
          log.error('handler ignored cancellation; exiting so the work is redone elsewhere', { object: key });
          (o.onStuck ?? (() => process.exit(70)))();
        }, o.stuckGraceMs ?? 10_000);
      };
      signal.addEventListener('abort', watchdog, { once: true });
      const result = await run.then(
        (r) => r,
        (error: unknown) => ({ error }),
      );
      signal.removeEventListener('abort', watchdog);
      let outcome = toOutcome(result);
      if (timeout.aborted && outcome.kind !== 'done')
        outcome = { kind: 'retry', afterMs: -1, reason: `timed out after ${fn.timeout}s` };
      if (shutdown.signal.aborted && outcome.kind !== 'done') {
        msg.nak(0); // shutting down: let another replica take it now
        return;
      }
      m.observe('tideway_handler_duration_seconds', (performance.now() - started) / 1000, labels);
      await settle(msg, outcome, event, attempt);
    } finally {
      clearTimeout(stuck);
      clearInterval(heartbeat);
      await lease.release();
    }
  };

  const consumer = await bus.js.consumers.get(STREAM, durable);
  const messages = await consumer.consume({ max_messages: Math.max(32, fn.reservedConcurrency * 4) });
  const loop = (async () => {
    for await (const msg of messages) {
      m.inc('tideway_events_received_total', labels);
      let event: CloudEvent<unknown>;
      try {
        event = fromMessage(msg.headers, msg.data);
      } catch (error) {
        log.error('dropping a message that is not a valid CloudEvent', { subject: msg.subject, error });
        msg.term('invalid CloudEvent');
        continue;
      }
      const key = objectKeyOf({
        kind: ext(event, 'kind'),
        namespace: ext(event, 'namespace'),
        name: ext(event, 'name'),
      });
      const waiting = setInterval(() => msg.working(), ackWaitMs / 3);
      scheduler.submit({
        key,
        coalesce: coalesceClass(event.type),
        run: async () => {
          clearInterval(waiting);
          if (shutdown.signal.aborted) return msg.nak(0);
          await handle(msg, event, key).catch((error: unknown) => {
            log.warn('handler run failed before an outcome; redelivering', { object: key, error });
            msg.nak(1000);
          });
        },
        superseded: () => {
          clearInterval(waiting);
          msg.ack(); // a newer event for the same object is queued and covers this one
          m.inc('tideway_events_handled_total', { ...labels, outcome: 'coalesced' });
        },
      });
    }
  })();

  const lag = setInterval(async () => {
    const info = await consumer.info(true).catch(() => undefined);
    if (info) m.set('tideway_consumer_lag', info.num_pending + info.num_ack_pending, labels);
  }, 5000);

  return {
    stop: async (drainMs = timeoutMs) => {
      clearInterval(lag);
      await messages.close().catch(() => undefined);
      await loop.catch(() => undefined);
      // Let running handlers finish; after the deadline, cancel them (their events are redelivered).
      const deadline = new Promise((r) => setTimeout(r, drainMs).unref());
      await Promise.race([scheduler.idle(), deadline]);
      shutdown.abort(new Error('shutting down'));
      await scheduler.idle();
    },
  };
};
