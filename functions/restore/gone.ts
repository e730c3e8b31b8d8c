import type { CloudEvent } from 'cloudevents';
import { type RedisCluster, zRestore } from '../../shared/api/generated.ts';
import { type Condition, setCondition } from '../../shared/kube/conditions.ts';
import { handlerRecorder, regardingOf } from '../../shared/kube/events.ts';
import { passwordsOf } from '../../shared/rediscluster/auth.ts';
import { listPods, readAuth } from '../../shared/rediscluster/kube.ts';
import { probeInstances } from '../../shared/rediscluster/probe.ts';
import { markedRestore, RESTORING, restoringMessageFor } from '../../shared/rediscluster/restoring.ts';
import { done, type HandlerContext, type Outcome, retryAfter } from '../../shared/runtime/handler.ts';
import { readCluster, writeClusterStatus } from './kube.ts';
import { type Load, stateOf } from './state.ts';
import { command, inspectOrUndefined } from './target.ts';
import { type DataVerdict, judgeLoad, needsPromotion } from './verdict.ts';

export const VERDICT_WORDS = {
  loaded: 'the master holds the loaded data',
  untouched: 'the master kept the data it had',
  unknown: 'the master was given a whole RDB it did not load: its data may be incomplete',
  loading: 'the master is still loading',
  unreachable: 'the master does not answer',
} as const;

/**
 * A load that no run goes on with (its Restore deleted, or given up on): its target is made a
 * master again if it still follows the feed, which is gone; then what it holds, by the record.
 */
export const settleLoad = async (ctx: HandlerContext, rc: RedisCluster, load: Load): Promise<DataVerdict> => {
  const passwords = passwordsOf(await readAuth(ctx.kube, rc, false));
  const t = (await probeInstances(rc.metadata.name, await listPods(ctx.kube, rc), passwords)).find(
    (i) => i.pod === load.pod,
  );
  const password = passwords[t?.password ?? 0] ?? '';
  let seen = t?.ip ? await inspectOrUndefined(t.ip, password) : undefined;
  // Only while it is the cluster's recorded master: one a failover replaced meanwhile is a replica
  // now, and reconcile makes it follow the new master; promoting it would make two.
  if (
    t?.ip &&
    seen &&
    !seen.now.loading &&
    rc.status?.master === load.pod &&
    needsPromotion(seen.now, load.feedHost)
  ) {
    ctx.fence();
    await command(t.ip, password, 'REPLICAOF', 'NO', 'ONE');
    seen = await inspectOrUndefined(t.ip, password);
  }
  return judgeLoad(load, seen?.now);
};

/** How often, and for how many looks, a load's target that loads or does not answer is looked at again. */
export const SETTLE = { recheckMs: 5000, looks: 120 } as const;

/**
 * Whether to look at a settling load's target again rather than end with what is known: while it
 * still loads (it may yet follow the feed when done) or does not answer, for at most
 * `SETTLE.looks` looks (10 minutes of waiting) and never past the delivery's last retry.
 */
export const lookAgain = (verdict: DataVerdict, ctx: Pick<HandlerContext, 'attempt' | 'maxAttempts'>) =>
  (verdict === 'loading' || verdict === 'unreachable') &&
  ctx.attempt < Math.min(SETTLE.looks, ctx.maxAttempts - 1);

/**
 * A Restore deleted while its cluster carries Restoring=True for it (the function stopped
 * mid-load, then someone deleted the Restore): nothing would ever end the condition, and the
 * master might still follow a feed that is gone. From the deleted object's record, the master is
 * made a master again and the condition ends, saying which data it holds.
 */
export const restoreGone = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> => {
  const parsed = zRestore.safeParse((event.data as { object?: unknown } | undefined)?.object);
  if (!parsed.success) return done;
  const r = parsed.data;
  const namespace = r.metadata.namespace ?? '';
  const rc = await readCluster(ctx.kube, namespace, r.spec.cluster.name);
  if (!rc || markedRestore(rc) !== r.metadata.name) return done;
  const load = (() => {
    try {
      return stateOf(r.metadata.annotations).load;
    } catch {
      return undefined;
    }
  })();
  const verdict = load ? await settleLoad(ctx, rc, load) : undefined;
  if (verdict && lookAgain(verdict, ctx))
    return retryAfter(SETTLE.recheckMs, `SettlingLoad: ${VERDICT_WORDS[verdict]}`);
  const words = verdict ? VERDICT_WORDS[verdict] : 'no data was loaded';
  const message = `${restoringMessageFor(r.metadata.name)}was deleted before it ended; ${words}`;
  ctx.fence();
  await writeClusterStatus(ctx.kube, rc, (s) => ({
    ...s,
    conditions: setCondition(
      s.conditions as Condition[] | undefined,
      { type: RESTORING, status: 'False', reason: 'RestoreDeleted', message },
      rc.metadata.generation,
      ctx.clock(),
    ),
  }));
  await handlerRecorder(ctx, 'restore').record({
    regarding: regardingOf(rc, namespace),
    type: 'Warning',
    reason: 'RestoreDeleted',
    action: 'Restore',
    note: message,
  });
  return done;
};
