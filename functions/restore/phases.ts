import type { BackupStoreSpec } from '../../shared/backup/store-config.ts';
import { describeRunning } from '../../shared/restore/ended.ts';
import { maxmemoryProblem, memoryProblem } from '../../shared/restore/load.ts';
import { LockLostError, type Outcome, retryAfter, TemporaryError } from '../../shared/runtime/handler.ts';
import { failureOf } from './errors.ts';
import { failRestore } from './finish.ts';
import { createBackup, listRestores, readBackup } from './kube.ts';
import { created, runningAtCreation } from './one-at-a-time.ts';
import { loadProblem } from './rdb-format.ts';
import { recordEvent } from './report.ts';
import { restoring } from './restoring.ts';
import { enterPhase, formatDuration, progressWriter, type Run } from './run.ts';
import { madeBy, safetyBackupName, safetyBackupOf } from './safety.ts';
import { chooseSource, describeRef, resolveSource } from './source.ts';
import { servingMaster } from './target.ts';
import { verifySource } from './verify.ts';

/** How long a Restore waits for its cluster's master to serve (a new cluster still starting). */
const MASTER_WAIT_MS = 10 * 60_000;
/** Verifications that could not read the object (the store did not answer) before giving up. */
const MAX_VERIFICATIONS = 5;

/** A failure of a step before any data was touched: retried when it may pass, else the end. */
const failedBeforeData = async (run: Run, error: unknown, at: string): Promise<Outcome> => {
  if (error instanceof LockLostError || run.ctx.signal.aborted) throw error;
  const f = failureOf(error);
  if (f.retry) throw new TemporaryError(f.reason, f.message);
  return failRestore(run, { ...f, data: 'untouched', at });
};

/** Whether a Restore reads its whole object before anything else (`verifyFirst`, true unless false). */
const verifiesFirst = (restore: Run['loaded']['restore']) => restore.spec.verifyFirst !== false;

/**
 * Pending: one restore per cluster at a time — a Restore made while another of the cluster ran
 * fails at once (RestoreInProgress), as the webhook refuses it with a 409: queueing would load
 * old data over a newer restore at some later time nobody chose. Then the source is chosen once
 * (`latest` becomes a particular Backup) and recorded.
 */
export const start = async (run: Run): Promise<Outcome> => {
  const { restore } = run.loaded;
  const cluster = restore.spec.cluster.name;
  const busy = (await listRestores(run.ctx.kube, run.loaded.key.namespace)).filter(
    (r) =>
      r.spec.cluster.name === cluster &&
      r.metadata.uid !== restore.metadata.uid &&
      runningAtCreation(r, restore),
  );
  if (busy.length > 0)
    return failRestore(run, {
      reason: 'RestoreInProgress',
      message: `RedisCluster ${cluster} takes one restore at a time and ${busy.map((r) => `Restore ${describeRunning(r)}`).join(', ')} was not finished when this one was made: create this Restore again when none is running`,
      data: 'untouched',
      at: 'Pending',
    });
  let ref = run.loaded.state.source;
  try {
    ref ??= await chooseSource(run.ctx.kube, restore);
  } catch (error) {
    return failedBeforeData(run, error, 'Pending');
  }
  if (!run.loaded.state.source) await run.loaded.writeState({ ...run.loaded.state, source: ref });
  const source = describeRef(ref, restore);
  await enterPhase(
    run,
    'Verifying',
    verifiesFirst(restore)
      ? `reading ${source} to check it before any data is touched`
      : `checking the RDB header of ${source}; the rest is checked while it loads, before the master takes its end`,
    { source },
  );
  await recordEvent(run, {
    type: 'Normal',
    reason: 'Started',
    note: `restoring ${source} into RedisCluster ${cluster}`,
  });
  return verifying(run);
};

/**
 * Verifying: the whole object is read once — SHA-256, decryption, decompression, the RDB header —
 * and its format checked against the version the master runs, before anything else happens.
 */
export const verifying = async (run: Run): Promise<Outcome> => {
  const { restore, state } = run.loaded;
  const ref = state.source;
  if (!ref) return start(run);
  let master: Awaited<ReturnType<typeof servingMaster>>;
  try {
    master = await servingMaster(run);
  } catch (error) {
    const f = failureOf(error);
    if (!f.retry || run.ctx.clock().getTime() - created(restore) > MASTER_WAIT_MS)
      return failRestore(run, { ...f, data: 'untouched', at: 'Verifying' });
    await enterPhase(run, 'Verifying', `waiting for the master to serve: ${f.message}`);
    return retryAfter(5000, f.reason);
  }
  const verifications = state.verifications + 1;
  if (verifications > MAX_VERIFICATIONS)
    return failRestore(run, {
      reason: 'VerificationFailed',
      message: `gave up after ${MAX_VERIFICATIONS} attempts to read the object: ${restore.status?.error?.message ?? 'the function stopped each time'}`,
      data: 'untouched',
      at: 'Verifying',
    });
  await run.loaded.writeState({ ...state, verifications });
  const started = performance.now();
  /** A source this master cannot take: the end, with nothing touched. */
  const refuse = (reason: string, message: string) =>
    failRestore(run, { reason, message, data: 'untouched', at: 'Verifying' });
  try {
    const resolved = await resolveSource(run.ctx.kube, restore, ref);
    const tooBig = memoryProblem({
      limit: master.instance.memoryLimit,
      incoming: resolved.source.redis?.usedMemory,
    });
    if (tooBig) return refuse('InsufficientMemory', tooBig);
    const overMaxmemory = maxmemoryProblem({
      target: master.instance.maxmemory,
      source: resolved.source.redis?.maxmemory,
      counted: resolved.source.redis?.maxmemoryUsage,
      used: resolved.source.redis?.usedMemory,
      of: 'backup',
    });
    if (overMaxmemory) return refuse('ExceedsMaxmemory', overMaxmemory);
    // verifyFirst: false reads only the header now; the load checks the rest as it streams.
    const headOnly = !verifiesFirst(restore);
    const progress = progressWriter(run, resolved.source.rdbSize);
    const { format } = await verifySource(resolved, {
      signal: run.ctx.signal,
      ...(headOnly ? { headOnly } : { onProgress: progress.onProgress }),
    });
    await progress.flush();
    const version = {
      product: master.instance.product ?? 'redis',
      version: master.instance.version ?? 'unknown',
    };
    const problem = loadProblem(format, version);
    if (problem) return refuse('RdbVersionUnsupported', problem);
    const { describe, rdbSize, redis } = resolved.source;
    const sha = resolved.source.sha256.slice(0, 12);
    const from = `format ${format.version}, from ${redis?.product ?? 'redis'} ${redis?.version ?? 'unknown'}`;
    const took = formatDuration(performance.now() - started);
    await recordEvent(run, {
      type: 'Normal',
      reason: 'Verified',
      note: headOnly
        ? `${describe}: RDB header checked (${from}) in ${took}; verifyFirst is false: SHA-256 ${sha}… and the RDB's ${rdbSize} bytes are checked while it streams, and the master gets its end only once they matched`
        : `${describe}: SHA-256 ${sha}…, RDB ${rdbSize} bytes (${from}) in ${took}`,
    });
  } catch (error) {
    if (!(error instanceof LockLostError) && failureOf(error).retry)
      await run.loaded
        .writeStatus((s) => ({
          ...s,
          error: { reason: failureOf(error).reason, message: failureOf(error).message },
        }))
        .catch(() => undefined);
    return failedBeforeData(run, error, 'Verifying');
  }
  if (restore.spec.safetyBackup === false) return restoring(run);
  const name = safetyBackupName(restore.metadata.name);
  await enterPhase(run, 'SafetyBackup', `backing up the current data into Backup ${name} first`, {
    safetyBackup: name,
    progress: { bytes: 0 },
  });
  return safetyBackup(run);
};

/** Where the safety backup goes: the cluster's store, else the store of the source. */
const safetyStore = async (run: Run): Promise<BackupStoreSpec | undefined> => {
  const { restore, state } = run.loaded;
  if (run.rc.spec.backup?.store) return run.rc.spec.backup.store;
  if (restore.spec.source.s3) return restore.spec.source.s3.store;
  if (state.source?.kind !== 'backup') return undefined;
  const b = await readBackup(run.ctx.kube, run.loaded.key.namespace, state.source.name);
  return (b?.status?.store as BackupStoreSpec | undefined) ?? b?.spec.store;
};

/** Looks of its delivery left when the wait for a safety backup gives up (half, with fewer than twice as many). */
export const SAFETY_WAIT_MARGIN = 10;

/**
 * SafetyBackup: a Backup of the current data, made by the backup function, which takes this
 * cluster's lock to choose its source — so this run makes it and lets go (waiting for it while
 * holding the lock would wait forever). The Backup's outcome brings the next run at once
 * (./waiting.ts); a look every `safetyRecheckMs` is the fallback for an outcome lost in a crash.
 * A failed safety backup fails the restore before any data is touched.
 */
export const safetyBackup = async (run: Run): Promise<Outcome> => {
  const { restore } = run.loaded;
  const name = restore.status?.safetyBackup ?? safetyBackupName(restore.metadata.name);
  const b = await readBackup(run.ctx.kube, run.loaded.key.namespace, name);
  if (!b) {
    const store = await safetyStore(run);
    if (!store)
      return failRestore(run, {
        reason: 'NoStore',
        message: `no store for the safety backup: set spec.backup.store on RedisCluster ${restore.spec.cluster.name}, or set safetyBackup: false`,
        data: 'untouched',
        at: 'SafetyBackup',
        marked: true,
      });
    run.ctx.fence();
    if (await createBackup(run.ctx.kube, run.loaded.key.namespace, safetyBackupOf(restore, store)))
      await recordEvent(run, {
        type: 'Normal',
        reason: 'SafetyBackupStarted',
        note: `Backup ${name} takes the current data before it is replaced`,
      });
    return retryAfter(run.safetyRecheckMs, 'SafetyBackup');
  }
  if (!madeBy(b, restore))
    return failRestore(run, {
      reason: 'SafetyBackupNameTaken',
      message: `Backup ${name} exists and was not made by this Restore (an earlier Restore of the same name made it, or someone else): delete or rename it, or give this Restore another name`,
      data: 'untouched',
      at: 'SafetyBackup',
      marked: true,
    });
  const phase = b.status?.phase;
  if (phase === 'Failed')
    return failRestore(run, {
      reason: 'SafetyBackupFailed',
      message: `safety backup ${name} failed (${b.status?.error?.reason ?? 'no reason'}: ${b.status?.error?.message ?? ''}); nothing was restored`,
      data: 'untouched',
      at: 'SafetyBackup',
      marked: true,
    });
  if (phase !== 'Completed') {
    // The wait ends well before the runtime's retries of this delivery do (a few looks that fail
    // on their own must not use them up): the Restore finishes with a reason, its Backups let go
    // and the cluster free for another restore.
    if (
      run.ctx.attempt >=
      run.ctx.maxAttempts - Math.min(SAFETY_WAIT_MARGIN, Math.floor(run.ctx.maxAttempts / 2))
    )
      return failRestore(run, {
        reason: 'SafetyBackupTimedOut',
        message: `safety backup ${name} was still ${phase ?? 'Pending'} after ${run.ctx.attempt} looks; nothing was restored: see Backup ${name}, then create the Restore again (or set safetyBackup: false)`,
        data: 'untouched',
        at: 'SafetyBackup',
        marked: true,
      });
    return retryAfter(run.safetyRecheckMs, 'SafetyBackup');
  }
  if (!run.loaded.state.safety && b.metadata.uid)
    await run.loaded.writeState({ ...run.loaded.state, safety: { name, uid: b.metadata.uid } });
  await recordEvent(run, {
    type: 'Normal',
    reason: 'SafetyBackupCompleted',
    note: `Backup ${name}: ${b.status?.size ?? 0} bytes at ${b.status?.location ?? ''}`,
  });
  return restoring(run);
};
