import type { EventPublisher } from '../../shared/bus/types.ts';
import { backoffMs } from '../../shared/runtime/backoff.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { Metrics } from '../../shared/runtime/metrics.ts';
import { type CursorEntry, type CursorStore, cursorKey } from './cursor.ts';
import { type Change, resourceEvent } from './events.ts';
import type { KubeObj, Watched } from './kinds.ts';

type Pending = { watched: Watched; obj: KubeObj; gone: boolean };

export type ListSink = {
  /** One page of the list: anything new or changed is announced. */
  page(objs: readonly KubeObj[]): void;
  /** The list is complete: anything known of this kind but not seen in it was deleted. */
  end(): void;
};

export type Sync = {
  /** A complete list of one kind, page by page (a list that fails midway just never ends). */
  beginList(watched: Watched): ListSink;
  /** A complete list of one kind in one go. */
  list(watched: Watched, objs: readonly KubeObj[]): void;
  /** Resolves once at most `limit` objects wait to be published: back-pressure for paged lists. */
  drained(limit: number): Promise<void>;
  /** One watch event. */
  observe(watched: Watched, phase: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObj): void;
  /** Objects not yet published. */
  pending(): number;
  /** Resolves once nothing is pending or in flight. */
  idle(): Promise<void>;
  /** Stops publishing; what is not yet published stays unpublished (the cursor did not move). */
  stop(): Promise<void>;
};

export type SyncOptions = {
  source: string;
  publisher: EventPublisher;
  store: CursorStore;
  cursor: Map<string, CursorEntry>;
  log: Logger;
  metrics: Metrics;
  /** Objects published at once; each object is only ever published by one of them at a time. */
  concurrency?: number;
};

const keyOf = (w: Watched, o: KubeObj) =>
  cursorKey(w.kind, o.metadata?.namespace ?? '', o.metadata?.name ?? '');

/** A stand-in for an object known only from the cursor (it was deleted while no one watched). */
const fromCursor = (e: CursorEntry): KubeObj => ({
  kind: e.kind,
  metadata: {
    namespace: e.namespace,
    name: e.name,
    uid: e.uid,
    resourceVersion: e.rv,
    generation: e.generation,
  },
});

/**
 * Turns list and watch results into published events, at least once and in per-object order.
 * The cursor (what was last published per object) decides what an observation means: added,
 * updated, deleted, or nothing new. Observations of one object coalesce while it waits — only its
 * latest state is published — and the cursor moves only after JetStream acked the event, so a
 * crash at any point means a republish (a duplicate the stream drops), never a lost change.
 */
export const createSync = (o: SyncOptions): Sync => {
  const cursor = o.cursor;
  const concurrency = o.concurrency ?? 64;
  const waiting = new Map<string, Pending>();
  const queue = new Set<string>();
  const inFlight = new Set<string>();
  let stopped = false;
  let idleWaiters: (() => void)[] = [];
  let drainWaiters: { limit: number; resolve: () => void }[] = [];

  const enqueue = (key: string, p: Pending) => {
    waiting.set(key, p);
    queue.add(key);
    pump();
  };

  const pump = () => {
    o.metrics.set('tideway_watcher_pending', waiting.size);
    for (const key of queue) {
      if (stopped || inFlight.size >= concurrency) break;
      if (inFlight.has(key)) continue;
      queue.delete(key);
      const p = waiting.get(key);
      waiting.delete(key);
      if (!p) continue;
      inFlight.add(key);
      void publishWithRetry(key, p).finally(() => {
        inFlight.delete(key);
        pump();
      });
    }
    if (waiting.size === 0 && inFlight.size === 0) {
      for (const w of idleWaiters) w();
      idleWaiters = [];
    }
    if (drainWaiters.length > 0) {
      const ready = drainWaiters.filter((d) => stopped || waiting.size <= d.limit);
      drainWaiters = drainWaiters.filter((d) => !ready.includes(d));
      for (const d of ready) d.resolve();
    }
  };

  const emit = async (c: Change) => {
    const event = resourceEvent(o.source, c);
    if (!event) return;
    const ack = await o.publisher.publish(event);
    o.metrics.inc('tideway_watcher_published_total', {
      type: c.type,
      kind: c.watched.kind,
      duplicate: String(ack.duplicate),
    });
  };

  const publishOne = async (key: string, p: Pending) => {
    const known = cursor.get(key);
    const uid = p.obj.metadata?.uid ?? '';
    // A different uid under the same name: the old object is gone, whatever we observed since.
    if (known && (p.gone ? false : known.uid !== uid)) {
      await emit({ type: 'deleted', watched: p.watched, obj: fromCursor(known) });
      await o.store.remove(key);
      cursor.delete(key);
    }
    const now = cursor.get(key);
    if (p.gone) {
      // Never announced, never anything to retract.
      if (!now) return;
      await emit({ type: 'deleted', watched: p.watched, obj: now.uid === uid ? p.obj : fromCursor(now) });
      await o.store.remove(key);
      cursor.delete(key);
      return;
    }
    const rv = p.obj.metadata?.resourceVersion ?? '';
    if (now && now.rv === rv) return;
    const fp = p.watched.fingerprint?.(p.obj);
    // A status-only change is remembered, not announced.
    if (!now || fp === undefined || now.fp !== fp)
      await emit({ type: now ? 'updated' : 'added', watched: p.watched, obj: p.obj });
    const m = p.obj.metadata ?? {};
    const entry: CursorEntry = {
      kind: p.watched.kind,
      namespace: m.namespace ?? '',
      name: m.name ?? '',
      uid,
      rv,
      ...(m.generation !== undefined ? { generation: m.generation } : {}),
      ...(fp !== undefined ? { fp } : {}),
    };
    await o.store.put(key, entry);
    cursor.set(key, entry);
  };

  const publishWithRetry = async (key: string, p: Pending) => {
    for (let attempt = 1; !stopped; attempt++) {
      try {
        await publishOne(key, p);
        return;
      } catch (error) {
        o.metrics.inc('tideway_watcher_publish_failures_total');
        if (attempt === 1 || attempt % 20 === 0)
          o.log.warn('publish failed; retrying', { key, attempt, error });
        await new Promise((r) => setTimeout(r, backoffMs(attempt, 100, 5000)));
        // A newer observation arrived while we waited: publish that instead.
        const newer = waiting.get(key);
        if (newer) {
          waiting.delete(key);
          queue.delete(key);
          p = newer;
        }
      }
    }
  };

  const beginList = (watched: Watched): ListSink => {
    const seen = new Set<string>();
    return {
      page: (objs) => {
        for (const obj of objs) {
          const key = keyOf(watched, obj);
          seen.add(key);
          const known = cursor.get(key);
          if (
            known &&
            known.uid === obj.metadata?.uid &&
            known.rv === obj.metadata?.resourceVersion &&
            !waiting.has(key)
          )
            continue;
          enqueue(key, { watched, obj, gone: false });
        }
      },
      end: () => {
        for (const [key, e] of cursor) {
          if (e.kind === watched.kind && !seen.has(key))
            enqueue(key, { watched, obj: fromCursor(e), gone: true });
        }
        // Observed before this list but now absent from it (added and deleted meanwhile).
        for (const [key, p] of waiting) {
          if (p.watched.kind === watched.kind && !seen.has(key) && !p.gone)
            waiting.set(key, { ...p, gone: true });
        }
      },
    };
  };

  return {
    beginList,
    list: (watched, objs) => {
      const sink = beginList(watched);
      sink.page(objs);
      sink.end();
    },
    drained: (limit) =>
      stopped || waiting.size <= limit
        ? Promise.resolve()
        : new Promise<void>((resolve) => drainWaiters.push({ limit, resolve })),
    observe: (watched, phase, obj) =>
      enqueue(keyOf(watched, obj), { watched, obj, gone: phase === 'DELETED' }),
    pending: () => waiting.size + inFlight.size,
    idle: () =>
      waiting.size === 0 && inFlight.size === 0
        ? Promise.resolve()
        : new Promise<void>((r) => idleWaiters.push(r)),
    stop: async () => {
      stopped = true;
      waiting.clear();
      queue.clear();
      while (inFlight.size > 0) await new Promise((r) => setTimeout(r, 20));
      for (const w of idleWaiters) w();
      idleWaiters = [];
      for (const d of drainWaiters) d.resolve();
      drainWaiters = [];
    },
  };
};
