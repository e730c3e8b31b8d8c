import type { JetStreamManager } from '@nats-io/jetstream';
import { Hono } from 'hono';
import { z } from 'zod';
import { type Backlog, backlogOf } from '../../shared/runtime/durables.ts';

/** How long an answer stands for every poll of the same function's ScaledObject. */
const FRESH_MS = 1000;
/** While a newer answer is being fetched, the last one is given for this long at most. */
const STALE_MS = 30_000;
/** Functions remembered at once (each a handful of numbers); the oldest goes first. */
const MAX_ENTRIES = 512;

const zBase = z
  .string()
  .regex(/^fn-[a-z0-9]([a-z0-9-]{0,200}[a-z0-9])?$/, "a function's consumer name, like fn-reconcile");

type Entry = { done?: { at: number; backlog: Backlog }; fetching?: Promise<Backlog> };

/**
 * GET /lag/<consumer>: the backlog summed over a function's partition consumers, for KEDA's
 * metrics-api scaler (`valueLocation: lag`), one trigger per function. KEDA's nats-jetstream
 * scaler takes one consumer per trigger and fetches every consumer of the account for each, so
 * twelve partitions made its cost grow with the square of the consumers (docs/helm.md). Here a
 * poll costs the function's own twelve info requests, at most once a second; one fetch at a time
 * per function, and while it runs, polls get the last answer (a slow NATS must not pile up
 * fetches nor time KEDA out: KEDA leaves the replicas as they are on any error).
 *
 * A function whose consumers are not all there counts as one waiting event: scaled to zero before
 * it ever ran, or after its consumers or the stream were deleted, it would otherwise never start.
 * A namespaced watcher answers for its own namespace's functions only (`namespace`).
 */
export const lagRoutes = (jsm: JetStreamManager, o: { namespace?: string; now?: () => number } = {}) => {
  // Monotonic: a wall clock stepped back must not make an old answer look fresh for that long.
  const now = o.now ?? (() => performance.now());
  const entries = new Map<string, Entry>();
  const fetch = (base: string, entry: Entry) => {
    const fetching = backlogOf(jsm, base).then((backlog) => {
      entry.done = { at: now(), backlog };
      return backlog;
    });
    const settled = () => {
      if (entry.fetching === fetching) entry.fetching = undefined;
    };
    entry.fetching = fetching;
    fetching.then(settled, settled);
    return fetching;
  };
  const lagOf = (base: string): Promise<Backlog> => {
    let entry = entries.get(base);
    if (!entry) {
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
      entry = {};
      entries.set(base, entry);
    }
    const age = entry.done ? now() - entry.done.at : Number.POSITIVE_INFINITY;
    if (entry.done && age < FRESH_MS) return Promise.resolve(entry.done.backlog);
    const fetching = entry.fetching ?? fetch(base, entry);
    return entry.done && age < STALE_MS ? Promise.resolve(entry.done.backlog) : fetching;
  };

  return new Hono().get('/lag/:consumer', async (c) => {
    const base = zBase.safeParse(c.req.param('consumer'));
    if (!base.success) return c.json({ error: base.error.issues[0]?.message ?? 'invalid consumer' }, 400);
    if (o.namespace && !base.data.endsWith(`-ns-${o.namespace}`))
      return c.json({ error: `this watcher serves namespace ${o.namespace} only` }, 403);
    try {
      const b = await lagOf(base.data);
      const lag = b.pending + b.ackPending + (b.missing > 0 ? 1 : 0);
      return c.json({ consumer: base.data, lag, ...b });
    } catch {
      return c.json({ error: "the function's consumers cannot be read from NATS now" }, 503);
    }
  });
};
