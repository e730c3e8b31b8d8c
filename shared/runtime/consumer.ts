import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import type { CloudEvent } from 'cloudevents';
import type { Bus } from '../bus/connect.ts';
import { extension } from '../events/extension.ts';
import { fromMessage } from '../events/nats-binding.ts';
import { encodeToken, filterSubject, objectKeyOf, PARTITIONS, STREAM } from '../events/subjects.ts';
import { boundedKubeConfig } from '../kube/timeouts.ts';
import { backoffMs } from './backoff.ts';
import { ackWaitMsOf, type FunctionConfig, toMs } from './config.ts';
import { consumerBacklog, consumerName, partitionConsumerName } from './durables.ts';
import {
  type Deps,
  type FailureStatus,
  type Handler,
  type HandlerContext,
  type LockKey,
  LockLostError,
  type Outcome,
  toOutcome,
} from './handler.ts';
import { keyedScheduler, type Slot } from './keyed-scheduler.ts';
import { LockAbortedError, type LockLease, type ObjectLocks } from './object-lock.ts';
import { members, prioritiesOf } from './partitions.ts';
import { reportFailure } from './report.ts';

export type ConsumerOptions = {
  bus: Bus;
  name: string;
  fn: FunctionConfig;
  handler: Handler;
  /** What a run locks, if not the event's own object: the handler module's `lockKey`. */
  lockKey?: LockKey;
  /** What a failure report writes beside its condition: the handler module's `failureStatus`. */
  failureStatus?: FailureStatus;
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
/** How long asking for a lock that another process keeps idle may take (a round trip or two). */
const KEPT_LOCK_HANDOVER_MS = 1000;
const ext = (event: CloudEvent<unknown>, name: string) => extension(event, name) ?? '';
const ownKeyOf = (event: CloudEvent<unknown>) =>
  objectKeyOf({ kind: ext(event, 'kind'), namespace: ext(event, 'namespace'), name: ext(event, 'name') });

/** A run's keys: the object it is about (coalescing, reports) and what it locks. */
type Keys = { own: string; lock: string };

/** The lock key `lockKey` gives, or why it gave none. */
const lockKeyFor = (lockKey: LockKey | undefined, event: CloudEvent<unknown>, own: string) => {
  if (!lockKey) return { key: own };
  try {
    const key = lockKey(event);
    if (typeof key === 'string' && key !== '') return { key };
    return { key: own, invalid: `lockKey gave ${JSON.stringify(key)} for event ${event.id}` };
  } catch (error) {
    return { key: own, invalid: `lockKey failed for event ${event.id}: ${(error as Error)?.message}` };
  }
};

/**
 * What a waiting run may be replaced by: resource events of the same object coalesce (handlers
 * re-read the object); ticks and outcomes queue per type. Per incarnation (the uid the watcher
 * puts on an object's own events): an earlier object's late event (a retried deleted event, say)
 * never stands in for a new object's of the same name, nor the other way round — a handler tells
 * them apart and would drop the one it was handed.
 */
export const coalesceKeyOf = (event: CloudEvent<unknown>, own: string) =>
  `${event.type.startsWith('dev.tideway.resource.') ? 'resource' : event.type} ${own} ${ext(event, 'uid')}`;

const PRIORITY_GROUP = 'tideway';
const PULL_EXPIRES_MS = 5000;

/**
 * Gives a running consume() a new priority for its next pulls, without closing it: closing
 * unsubscribes at once, and a message the server routes to the pull in that moment is lost to
 * both sides until ack_wait. @nats-io/jetstream reads `opts.priority` each time it pulls (3.4;
 * test/runtime/consumer.test.ts "sends each object's events to one replica" fails if that
 * changes: the first replica would stay first everywhere).
 * False when the client does not look like that: the caller closes and reopens instead.
 */
const repull = (messages: ConsumerMessages, priority: number): boolean => {
  const opts = (messages as unknown as { opts?: { priority?: unknown } }).opts;
  if (!opts || typeof opts.priority !== 'number') return false;
  opts.priority = priority;
  return true;
};
/** Where replicas of one function find each other (partitions.ts); not stored. */
const MEMBERS_SUBJECT = 'tideway_members';

/**
 * Makes (or updates) a function's durable consumers, one per partition, as its replicas read
 * them; returns their common prefix (`consumerName`). Each replica pulls every partition with its
 * own priority (partitions.ts): the server serves the first in line while it pulls, the next
 * when it is gone.
 */
export const ensureConsumers = async (
  jsm: JetStreamManager,
  o: { name: string; fn: FunctionConfig; namespace?: string | undefined },
): Promise<string> => {
  const { fn } = o;
  const base = consumerName(o.name, o.namespace);
  for (let p = 0; p < PARTITIONS; p++) {
    const config = {
      durable_name: partitionConsumerName(base, p),
      filter_subjects: [
        ...new Set(fn.events.map((e) => filterSubject(e.cloudevent.type, e.cloudevent.kind, o.namespace, p))),
      ],
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: ackWaitMsOf(fn) * NS,
      // We count attempts ourselves so exhaustion is reported, never a silent stop of redelivery.
      max_deliver: -1,
      // Bounds what one function holds unacked, hence the memory of every replica.
      max_ack_pending: Math.max(256, fn.reservedConcurrency * 64),
      priority_groups: [PRIORITY_GROUP],
      priority_policy: 'prioritized' as const,
    };
    const existing = await jsm.consumers.info(STREAM, config.durable_name).catch(() => undefined);
    if (existing) await jsm.consumers.update(STREAM, config.durable_name, { ...existing.config, ...config });
    else await jsm.consumers.add(STREAM, config);
  }
  // The one unpartitioned consumer of earlier versions would keep events nobody reads.
  await jsm.consumers.delete(STREAM, base).catch(() => undefined);
  return base;
};

/**
 * Runs one function over its durable consumer. Per object (or per `lockKey`): one handler at a
 * time in this process (keyed scheduler) and across replicas (object lock); waiting for a lock
 * another replica holds takes no concurrency slot. Outcomes: done → ack, retry → nak(delay),
 * terminal or retries exhausted → condition + Event + term. A delivery already past the attempt
 * limit when it starts (earlier ones hung or crashed) is exhausted without running. Each run's
 * Kubernetes calls time out and stop with the run. Invalid messages are termed.
 */
export const startConsumer = async (o: ConsumerOptions): Promise<RunningConsumer> => {
  const { bus, name, fn, deps } = o;
  const log = deps.log.child({ function: name });
  const timeoutMs = fn.timeout * 1000;
  const ackWaitMs = ackWaitMsOf(fn);
  const base = await ensureConsumers(bus.jsm, { name, fn, namespace: o.namespace });

  const scheduler = keyedScheduler(fn.reservedConcurrency);
  const shutdown = new AbortController();
  const m = deps.metrics;
  const labels = { function: name };

  // Failure reports are best effort, and bounded like every other call.
  const reportKube = boundedKubeConfig(deps.kube);
  const eventLog = (event: CloudEvent<unknown>) =>
    log.child({
      event: event.id,
      object: `${ext(event, 'namespace')}/${ext(event, 'name')}`,
      kind: ext(event, 'kind'),
    });

  /** Fails a delivery for good: a condition and a Warning Event on the event's object, then term. */
  const fail = async (
    msg: JsMsg,
    event: CloudEvent<unknown>,
    failure: { reason: string; message: string; outcome: 'terminal' | 'exhausted' },
  ) => {
    const elog = eventLog(event);
    const { reason, message } = failure;
    elog.error('failed for good', { attempt: msg.info.deliveryCount, reason, message });
    await reportFailure(
      reportKube,
      name,
      {
        kind: ext(event, 'kind'),
        namespace: ext(event, 'namespace'),
        name: ext(event, 'name'),
        ...(ext(event, 'uid') ? { uid: ext(event, 'uid') } : {}),
        conditionType: fn.tideway.failureCondition,
        reason,
        message,
        ...(fn.tideway.failureKinds ? { conditionKinds: fn.tideway.failureKinds } : {}),
      },
      elog,
      o.failureStatus,
    );
    msg.term(`${reason}: ${message}`.slice(0, 200));
    m.inc('tideway_events_handled_total', { ...labels, outcome: failure.outcome });
  };

  const settle = async (msg: JsMsg, outcome: Outcome, event: CloudEvent<unknown>, attempt: number) => {
    if (outcome.kind === 'done') {
      await msg
        .ackAck()
        .catch((error) => eventLog(event).warn('ack failed; the event will be redelivered', { error }));
      m.inc('tideway_events_handled_total', { ...labels, outcome: 'done' });
      return;
    }
    if (outcome.kind === 'terminal')
      return fail(msg, event, { reason: outcome.reason, message: outcome.message, outcome: 'terminal' });
    if (attempt >= fn.maximumRetryAttempts)
      return fail(msg, event, {
        reason: 'RetriesExhausted',
        message: `gave up after ${attempt} attempts: ${outcome.reason}`,
        outcome: 'exhausted',
      });
    const delay =
      outcome.afterMs >= 0
        ? outcome.afterMs
        : backoffMs(attempt, toMs(fn.tideway.initialDelay), toMs(fn.tideway.maxDelay));
    eventLog(event).info('retrying later', { attempt, delayMs: delay, reason: outcome.reason });
    msg.nak(delay);
    m.inc('tideway_events_handled_total', { ...labels, outcome: 'retry' });
  };

  const handle = async (msg: JsMsg, event: CloudEvent<unknown>, keys: Keys, slot: Slot) => {
    const attempt = msg.info.deliveryCount;
    // An attempt counts when it starts. A delivery past the limit means earlier ones never
    // settled: the handler hung (and its process was ended) or crashed the process. Running it
    // again would do that again, to every other handler of the process as well.
    if (attempt > fn.maximumRetryAttempts) {
      return fail(msg, event, {
        reason: 'RetriesExhausted',
        message: `the handler did not finish in ${attempt - 1} attempts (it hung, or crashed its process); not trying again`,
        outcome: 'exhausted',
      });
    }
    const key = keys.lock;
    // A lock another replica holds is waited for outside the concurrency slot: the wait may last
    // as long as that replica's handler, and other objects' events must not queue behind it.
    const lease =
      (await o.locks.tryAcquire(key)) ??
      (await slot.outside(() => o.locks.acquire(key, { signal: shutdown.signal })));
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([timeout, lease.lost, shutdown.signal]);
    const started = performance.now();
    let stuck: NodeJS.Timeout | undefined;
    // Other objects' locks the run holds for a while (withLock): fence() checks them too.
    const also = new Map<string, LockLease>();
    const fence = () => {
      if (!lease.held()) throw new LockLostError(`lost the lock of ${key}; not acting on a stale decision`);
      for (const [k, l] of also)
        if (!l.held()) throw new LockLostError(`lost the lock of ${k}; not acting on a stale decision`);
      if (signal.aborted) throw signal.reason;
    };
    const withLock: HandlerContext['withLock'] = async (other, { waitMs }, fn) => {
      if (other === key || also.has(other)) return { value: await fn(signal) };
      // Even "no wait" waits for a lock another process only keeps idle to come back.
      const inner =
        (await o.locks.tryAcquire(other)) ??
        (await o.locks
          .acquire(other, {
            signal: AbortSignal.any([signal, AbortSignal.timeout(Math.max(waitMs, KEPT_LOCK_HANDOVER_MS))]),
          })
          .catch((error: unknown) => {
            if (error instanceof LockAbortedError && !signal.aborted) return undefined;
            throw error;
          }));
      if (!inner) return undefined;
      also.set(other, inner);
      try {
        return { value: await fn(AbortSignal.any([signal, inner.lost])) };
      } finally {
        also.delete(other);
        await inner.release();
      }
    };
    try {
      const run = o.handler(event, {
        ...deps,
        // Every Kubernetes call of the run times out, and stops when the run is cancelled.
        kube: boundedKubeConfig(deps.kube, { signal }),
        log: log.child({ event: event.id, object: keys.own, ...(key !== keys.own ? { lock: key } : {}) }),
        function: name,
        attempt,
        maxAttempts: fn.maximumRetryAttempts,
        signal,
        fence,
        lockToken: () => lease.token(),
        withLock,
      });
      // The lock is held until the handler really ends, even past its timeout: releasing it early
      // would let another replica work on the same object at the same time.
      const watchdog = () => {
        stuck = setTimeout(() => {
          log.error('handler ignored cancellation; exiting so the work is redone elsewhere', {
            object: keys.own,
          });
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
      await lease.release();
    }
  };

  /** One delivered message: to the keyed scheduler, which runs it when its object is free. */
  const onMessage = (msg: JsMsg) => {
    m.inc('tideway_events_received_total', labels);
    let event: CloudEvent<unknown>;
    try {
      event = fromMessage(msg.headers, msg.data);
    } catch (error) {
      log.error('dropping a message that is not a valid CloudEvent', { subject: msg.subject, error });
      msg.term('invalid CloudEvent');
      return;
    }
    const own = ownKeyOf(event);
    const { key, invalid } = lockKeyFor(o.lockKey, event, own);
    // Keeps the message ours from now until it is settled: waiting in line, for a lock, running.
    const heartbeat = setInterval(() => msg.working(), ackWaitMs / 3);
    scheduler.submit({
      key,
      // Per object: under a shared lock key one object's event never stands in for another's.
      coalesce: coalesceKeyOf(event, own),
      run: async (slot) => {
        try {
          if (shutdown.signal.aborted) return msg.nak(0);
          if (invalid)
            return await fail(msg, event, {
              reason: 'InvalidLockKey',
              message: invalid,
              outcome: 'terminal',
            });
          await handle(msg, event, { own, lock: key }, slot);
        } catch (error) {
          log.warn('handler run failed before an outcome; redelivering', { object: own, error });
          msg.nak(shutdown.signal.aborted ? 0 : 1000);
        } finally {
          clearInterval(heartbeat);
        }
      },
      superseded: () => {
        clearInterval(heartbeat);
        msg.ack(); // a newer event for the same object is queued and covers this one
        m.inc('tideway_events_handled_total', { ...labels, outcome: 'coalesced' });
      },
    });
  };

  // A lane per partition: its pull, at this replica's priority for it, changed as members come
  // and go. A lane closed for a new priority still hands on what it had received.
  type Lane = { priority: number; readonly messages: ConsumerMessages; readonly done: Promise<void> };
  const lanes = new Map<number, Lane>();
  const batch = Math.max(16, fn.reservedConcurrency * 2);
  let stopping = false;
  let retry: NodeJS.Timeout | undefined;
  const open = async (partition: number, priority: number) => {
    const consumer = await bus.js.consumers.get(STREAM, partitionConsumerName(base, partition));
    // Pulls that expire every few seconds: a changed priority applies from the next one.
    const messages = await consumer.consume({
      max_messages: batch,
      expires: PULL_EXPIRES_MS,
      group: PRIORITY_GROUP,
      priority,
    });
    const lane: Lane = {
      priority,
      messages,
      done: (async () => {
        for await (const msg of messages) onMessage(msg);
      })().catch((error: unknown) => log.warn('a partition lane ended', { partition, error })),
    };
    lanes.set(partition, lane);
    // A lane that ends by itself (not closed here) is opened again: no partition goes unread.
    void lane.done.then(() => {
      if (stopping || lanes.get(partition) !== lane) return;
      lanes.delete(partition);
      again();
    });
  };
  const self = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  let reprioritizing = Promise.resolve();
  const reprioritize = (list: string[]) => {
    reprioritizing = reprioritizing.then(async () => {
      const priorities = prioritiesOf(list, self, PARTITIONS);
      for (const [p, priority] of priorities.entries()) {
        const lane = lanes.get(p);
        if (stopping || (lane && lane.priority === priority)) continue;
        if (lane && repull(lane.messages, priority)) {
          lane.priority = priority;
          continue;
        }
        if (lane) {
          lanes.delete(p);
          await lane.messages.close().catch(() => undefined);
          await lane.done;
        }
        await open(p, priority).catch((error: unknown) => {
          log.warn('could not open a partition lane; trying again', { partition: p, error });
          again();
        });
      }
    });
    return reprioritizing;
  };
  /** Opens what is missing a second from now (the bus away, a lane that ended). */
  const again = () => {
    if (stopping || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void reprioritize(team.list());
    }, 1000);
  };
  const team = members(bus.nc, {
    subject: `${MEMBERS_SUBJECT}.${encodeToken(base)}`,
    self,
    onChange: (list) => void reprioritize(list),
  });
  // Lanes open at priorities from the members that answered: a replica joining others does not
  // start first in line everywhere. Those already running change theirs from their next pull.
  await team.heard;
  await reprioritize(team.list());

  const lag = setInterval(async () => {
    const b = await consumerBacklog(bus.jsm, name, o.namespace).catch(() => undefined);
    if (b) m.set('tideway_consumer_lag', b.pending + b.ackPending, labels);
  }, 15_000);

  return {
    stop: async (drainMs = timeoutMs) => {
      clearInterval(lag);
      stopping = true;
      clearTimeout(retry);
      team.stop();
      await reprioritizing;
      for (const lane of lanes.values()) await lane.messages.close().catch(() => undefined);
      await Promise.all([...lanes.values()].map((l) => l.done));
      // The server has dropped this replica's pulls before the stop resolves: otherwise a publish
      // made after it, on another connection, may be processed first and routed to a pull no one
      // reads any more, where it waits out ack_wait. Bounded: a bus away must not hold up the stop.
      await Promise.race([
        bus.nc.flush().catch(() => undefined),
        new Promise((r) => setTimeout(r, 1000).unref()),
      ]);
      // Let running handlers finish; after the deadline, cancel them (their events are redelivered).
      const deadline = new Promise((r) => setTimeout(r, drainMs).unref());
      await Promise.race([scheduler.idle(), deadline]);
      shutdown.abort(new Error('shutting down'));
      await scheduler.idle();
    },
  };
};
