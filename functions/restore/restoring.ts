import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { rfc3339 } from '../../shared/kube/time.ts';
import { REDIS_PORT } from '../../shared/rediscluster/names.ts';
import { loadModeFor, loadRdb, maxmemoryProblem } from '../../shared/restore/load.ts';
import { failpoint } from '../../shared/runtime/failpoints.ts';
import { LockLostError, type Outcome, retryAfter } from '../../shared/runtime/handler.ts';
import { markRestoring } from './cluster-status.ts';
import { type Failure, failureOf, RestoreError } from './errors.ts';
import { completeRestore, failRestore } from './finish.ts';
import { describeSync, waitForReplicas } from './replicas.ts';
import { recordEvent } from './report.ts';
import { enterPhase, progressWriter, type Run } from './run.ts';
import { type Resolved, resolveSource } from './source.ts';
import { type Load, type LoadKind, loadFailure, type SourceRef } from './state.ts';
import { holdLast } from './stream.ts';
import { beforeLoad, command, inspectOrUndefined, probeCluster, servingMaster } from './target.ts';
import { judgeLoad, needsPromotion, nextStep } from './verdict.ts';
import { readSource, transferFailure } from './verify.ts';

/** A load of any size streams for long; the function's own timeout (serverless.yml) is the bound. */
const LOAD_TIMEOUT_MS = 55 * 60_000;
/** How long replicas get to resync after a load: a minute, plus a second per 20 MiB. */
const syncTimeoutMs = (rdbSize: number) => 60_000 + Math.floor(rdbSize / (20 * 1024 * 1024)) * 1000;

/** Stops the process at a named point of a transfer (TIDEWAY_FAILPOINTS; tests only). */
async function* withFailpoint(source: AsyncIterable<Buffer>, name: string) {
  let first = true;
  for await (const chunk of source) {
    yield chunk;
    if (first) failpoint(name);
    first = false;
  }
}

/** What a load loads: the chosen source, or (rolling back) the safety backup recorded as completed. */
export const refOf = (run: Pick<Run, 'loaded'>, of: LoadKind): SourceRef | undefined => {
  if (of === 'restore') return run.loaded.state.source;
  const safety = run.loaded.state.safety;
  // Recorded by every run since the uid was; one that began before has the name only.
  return safety
    ? { kind: 'backup', ...safety }
    : { kind: 'backup', name: run.loaded.restore.status?.safetyBackup ?? '', uid: '' };
};

/** The loaded data set refused for maxmemory, recorded before the target is promoted. */
const recordRefusal = async (run: Run, message: string) => {
  failpoint('restore.refusing');
  const s = run.loaded.state;
  if (s.load)
    await run.loaded.writeState({
      ...s,
      load: { ...s.load, refused: { reason: 'ExceedsMaxmemory', message } },
    });
  failpoint('restore.refused');
};

/**
 * One load into the master: recorded first (the feed's replication id, what the master was), the
 * cluster marked Restoring, then the RDB streamed through the feed with its last chunk held until
 * the object's checksum matched and the record says the end is going out.
 */
const loadOnce = async (run: Run, of: LoadKind): Promise<Attempt> => {
  const { restore } = run.loaded;
  const ref = refOf(run, of);
  if (!ref)
    throw new RestoreError('StateUnreadable', `annotation tideway.dev/restore-state names no source`, false);
  const resolved: Resolved = await resolveSource(run.ctx.kube, restore, ref);
  const target = await servingMaster(run);
  const before = await beforeLoad(target);
  const { mode, why } = loadModeFor({
    server: { product: target.instance.product ?? 'redis', version: target.instance.version },
    keys: before.keys,
    rss: target.instance.memory?.rss,
    limit: target.instance.memoryLimit,
    incoming: resolved.source.redis?.usedMemory,
  });
  const state = run.loaded.state;
  const attempt = (of === 'restore' ? state.loads : state.rollbacks) + 1;
  const load: Load = {
    of,
    attempt,
    replid: randomBytes(20).toString('hex'),
    pod: target.pod,
    feedHost: run.feedHost,
    delivered: false,
    before,
    rdbSize: resolved.source.rdbSize,
    startedAt: rfc3339(run.ctx.clock()),
    // A restore's load is checked against maxmemory; a rollback's never is.
    ...(of === 'restore'
      ? {
          guard: {
            ...(resolved.source.redis?.maxmemory === undefined
              ? {}
              : { sourceMaxmemory: resolved.source.redis.maxmemory }),
          },
        }
      : {}),
  };
  await run.loaded.writeState({
    ...state,
    load,
    ...(of === 'restore' ? { loads: attempt } : { rollbacks: attempt }),
  });
  const what =
    of === 'restore'
      ? `loads ${resolved.source.describe} into ${target.pod}`
      : `rolls ${target.pod} back to safety backup ${ref.kind === 'backup' ? ref.name : ''}`;
  await markRestoring(run, what);
  await enterPhase(run, 'Restoring', `${what} (load ${attempt} of ${run.maxLoads})`, {
    progress: { bytes: 0, percent: 0 },
    load: { of, mode, message: why.slice(0, 1024) },
  });
  await recordEvent(
    run,
    {
      type: of === 'restore' ? 'Normal' : 'Warning',
      reason: of === 'restore' ? 'Loading' : 'RollingBack',
      note: `${what}, ${resolved.source.rdbSize} bytes (load ${attempt} of ${run.maxLoads}; ${why})`,
    },
    { cluster: true },
  );
  const progress = progressWriter(run, resolved.source.rdbSize);
  const markDelivered = async () => {
    const s = run.loaded.state;
    if (s.load && !s.load.delivered)
      await run.loaded.writeState({ ...s, load: { ...s.load, delivered: true } });
    failpoint(`restore.${of}-delivered`);
  };
  try {
    await loadRdb({
      target: { host: target.ip, port: REDIS_PORT, password: target.password },
      feedHost: run.feedHost,
      targetPeer: target.ip,
      replid: load.replid,
      open: async () => ({
        rdb: Readable.from(
          holdLast(
            withFailpoint(readSource(resolved, run.ctx.signal), `restore.${of}-transfer`),
            markDelivered,
            resolved.source.rdbSize,
          ),
        ),
        // Parsed from the socket, the master takes the data set once the RDB's own end is parsed,
        // wherever that is in the stream: only the EOF mark, sent after the last chunk, completes
        // the transfer. Received to disk, it takes it once it has the announced size.
        ...(mode === 'disk' ? { size: resolved.source.rdbSize } : {}),
      }),
      timeoutMs: LOAD_TIMEOUT_MS,
      mode,
      ...(load.guard
        ? {
            maxmemoryGuard: {
              sourceMaxmemory: load.guard.sourceMaxmemory,
              record: (message: string) => recordRefusal(run, message),
            },
          }
        : {}),
      signal: run.ctx.signal,
      fence: run.ctx.fence,
      onProgress: progress.onProgress,
    });
    failpoint(`restore.after-${of}`);
    return { load: run.loaded.state.load ?? load };
  } catch (error) {
    if (error instanceof LockLostError || run.ctx.signal.aborted) throw error;
    return {
      load: run.loaded.state.load ?? load,
      error: failureOf(
        await transferFailure(resolved, error, {
          delivered: run.loaded.state.load?.delivered === true,
          signal: run.ctx.signal,
        }),
      ),
    };
  } finally {
    await progress.flush();
  }
};

/**
 * Restoring: load the backup into the master; then, from what the master holds — never from
 * what this run believes it did — finish, load again, roll back or fail. A redelivered run (the
 * function stopped mid-load) starts here with the recorded load and judges it the same way.
 */
export const restoring = async (run: Run): Promise<Outcome> => {
  const first = run.loaded.state.load
    ? { load: run.loaded.state.load }
    : await startLoad(run, 'restore', 'untouched');
  if (!('load' in first)) return first;
  let attempt: Attempt = first;
  for (;;) {
    const { instances, passwords } = await probeCluster(run);
    const t = instances.find((i) => i.pod === attempt.load.pod);
    const password = passwords[t?.password ?? 0] ?? '';
    let seen = t?.ip ? await inspectOrUndefined(t.ip, password) : undefined;
    if (t?.ip && seen && !seen.now.loading && needsPromotion(seen.now, attempt.load.feedHost)) {
      // Left following a feed that is gone: a master again, with whatever data it holds. Still a
      // replica, its count of loaded data tells whether maxmemory would evict it (a run that
      // stopped before recording the refusal): recorded first, as loadRdb does.
      const g = attempt.load.guard;
      const over =
        g && !attempt.load.refused && judgeLoad(attempt.load, seen.now) === 'loaded'
          ? maxmemoryProblem({
              target: seen.maxmemory,
              source: g.sourceMaxmemory,
              counted: seen.counted,
              of: 'loaded',
            })
          : undefined;
      if (over) await recordRefusal(run, over);
      run.ctx.fence();
      await command(t.ip, password, 'REPLICAOF', 'NO', 'ONE');
      seen = await inspectOrUndefined(t.ip, password);
    }
    const load = run.loaded.state.load ?? attempt.load;
    const error = loadFailure(load, attempt.error);
    const verdict = judgeLoad(load, seen?.now);
    const state = run.loaded.state;
    const safety = run.loaded.restore.status?.safetyBackup;
    const next = nextStep({
      verdict,
      load,
      error,
      loads: state.loads,
      rollbacks: state.rollbacks,
      maxLoads: run.maxLoads,
      safetyBackup: run.loaded.restore.spec.safetyBackup === false ? undefined : safety,
    });
    if (next.do === 'wait') return retryAfter(2000, next.why);
    if (t?.ip && seen && load.before.disklessLoad)
      await command(t.ip, password, 'CONFIG', 'SET', 'repl-diskless-load', load.before.disklessLoad).catch(
        (e: unknown) => run.ctx.log.warn('repl-diskless-load not put back', { error: e }),
      );
    if (next.do === 'fail')
      return failRestore(run, {
        reason: next.reason,
        message: next.message,
        data: next.data,
        at: 'Restoring',
        marked: true,
      });
    if (next.do === 'finish') return finish(run, load, next.data);
    const why = error ? `${error.reason}: ${error.message}` : 'the restore function stopped during the load';
    await recordEvent(
      run,
      {
        type: 'Warning',
        reason: error ? 'LoadFailed' : 'LoadInterrupted',
        note: `load ${load.attempt} (${load.of}) into ${load.pod} did not finish (${why}); ${
          verdict === 'untouched'
            ? `${load.pod} kept the data it had`
            : verdict === 'loaded'
              ? `${load.pod} holds it`
              : `${load.pod} may hold part of it`
        }; ${next.of === 'rollback' && load.of === 'restore' ? `rolling back to safety backup ${safety}` : 'loading again'}`,
      },
      { cluster: true },
    );
    if (next.of === 'rollback' && load.of === 'restore')
      await run.loaded.writeState({
        ...state,
        failure: error
          ? { reason: error.reason, message: error.message }
          : { reason: 'Interrupted', message: why },
      });
    const again = await startLoad(run, next.of, next.of === 'rollback' ? 'unknown' : 'untouched', true);
    if (!('load' in again)) return again;
    attempt = again;
  }
};

type Attempt = { load: Load; error?: Failure | undefined };

/**
 * A load that cannot start, ever (its source was deleted meanwhile, the safety backup too): the
 * restore ends, saying which data the master holds (`data`: its own, or what a failed load left).
 * One that may start later (the master does not serve yet) is retried by the runtime.
 */
const startLoad = async (
  run: Run,
  of: LoadKind,
  data: 'untouched' | 'unknown',
  marked = false,
): Promise<Attempt | Outcome> => {
  try {
    return await loadOnce(run, of);
  } catch (error) {
    if (error instanceof LockLostError || run.ctx.signal.aborted) throw error;
    const f = failureOf(error);
    if (f.retry) throw error;
    return failRestore(run, { reason: f.reason, message: f.message, data, at: 'Restoring', marked });
  }
};

/** The master holds loaded data: replicas resync (bounded wait), then the Restore ends. */
const finish = async (run: Run, load: Load, data: 'restored' | 'rolledBack'): Promise<Outcome> => {
  const probe = async () => {
    const { instances } = await probeCluster(run);
    return { instances, master: instances.find((i) => i.pod === load.pod) };
  };
  const sync = await waitForReplicas({
    probe,
    timeoutMs: syncTimeoutMs(load.rdbSize),
    signal: run.ctx.signal,
  });
  const { instances, passwords } = await probeCluster(run);
  const m = instances.find((i) => i.pod === load.pod);
  const seen = m?.ip ? await inspectOrUndefined(m.ip, passwords[m.password ?? 0] ?? '') : undefined;
  const keys = seen?.keys ?? m?.keys ?? 0;
  const id = seen?.now.replid ?? '';
  const history = { id, offset: seen?.offset ?? 0, previous: [load.replid].filter((r) => r !== id) };
  const syncText = sync ? describeSync(sync) : 'the replicas could not be checked';
  if (data === 'restored')
    return completeRestore(run, {
      keys,
      rdbBytes: load.rdbSize,
      sync: syncText,
      attempt: load.attempt,
      history,
    });
  const failure = run.loaded.state.failure ?? { reason: 'LoadFailed', message: 'the load failed' };
  return failRestore(run, {
    phase: 'RolledBack',
    reason: failure.reason,
    message: `${failure.message}; rolled back to safety backup ${run.loaded.restore.status?.safetyBackup ?? ''} (${keys} keys): ${syncText}`,
    data: 'rolledBack',
    at: 'Restoring',
    marked: true,
    history,
    keys,
  });
};
