import type { ConsumerInfo, JetStreamManager } from '@nats-io/jetstream';
import { Hono } from 'hono';
import { z } from 'zod';
import { STREAM } from '../../shared/events/subjects.ts';
import { backlogOf } from '../../shared/runtime/durables.ts';

/** How long one listing of the stream's consumers answers every function's ScaledObject. */
const FRESH_MS = 1000;

const zBase = z.string().regex(/^[A-Za-z0-9_-]{1,200}$/, 'a consumer name: letters, digits, - and _');

/**
 * GET /lag/<consumer>: the summed backlog of a function's partition consumers, for KEDA's
 * metrics-api scaler (`valueLocation: lag`), one trigger per function. KEDA's nats-jetstream
 * scaler takes one consumer per trigger and fetches every consumer of the account for each, so
 * twelve partitions made its cost grow with the square of the consumers (docs/helm.md). Here one
 * listing of the stream's consumers, at most once a second, answers all functions.
 *
 * A function whose consumers do not all exist yet (its first replica makes them) counts as one
 * waiting event: scaled to zero before it ever ran, it would otherwise never start.
 */
export const lagRoutes = (jsm: JetStreamManager, clock: () => number = Date.now) => {
  let last: { at: number; infos: Promise<ConsumerInfo[]> } | undefined;
  const list = () => {
    if (!last || clock() - last.at >= FRESH_MS) {
      const infos = (async () => {
        const all: ConsumerInfo[] = [];
        for await (const info of jsm.consumers.list(STREAM)) all.push(info);
        return all;
      })();
      last = { at: clock(), infos };
      // A failed listing is not kept: the next request tries again.
      infos.catch(() => {
        if (last?.infos === infos) last = undefined;
      });
    }
    return last.infos;
  };
  return new Hono().get('/lag/:consumer', async (c) => {
    const base = zBase.safeParse(c.req.param('consumer'));
    if (!base.success) return c.json({ error: base.error.issues[0]?.message ?? 'invalid consumer' }, 400);
    try {
      const b = backlogOf(base.data, await list());
      const lag = b.pending + b.ackPending + (b.missing > 0 ? 1 : 0);
      return c.json({ consumer: base.data, lag, ...b });
    } catch (error) {
      return c.json(
        { error: `the event stream's consumers cannot be listed: ${(error as Error).message}` },
        503,
      );
    }
  });
};
