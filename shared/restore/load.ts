import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectRedis, type RedisClient } from '../redis/client.ts';
import { maxmemoryCount, parseInfo } from '../redis/info.ts';
import { FeedError, startFeed } from './feed.ts';

export type LoadTarget = { host: string; port: number; password: string };

/** What the target says of its link to the feed, and of its memory against its maxmemory. */
const linkOf = async (c: RedisClient) => {
  const s = parseInfo(String(await c.command('INFO', 'all')));
  const r = s.replication ?? {};
  const m = s.memory;
  return {
    replid: r.master_replid,
    up: r.master_link_status === 'up',
    syncing: r.master_sync_in_progress === '1',
    loading: s.persistence?.loading === '1' || s.persistence?.async_loading === '1',
    keys: Object.values(s.keyspace ?? {}).reduce(
      (n, db) => n + Number(/(?:^|,)keys=(\d+)/.exec(db)?.[1] ?? 0),
      0,
    ),
    ...maxmemoryCount(m),
  };
};

export type LoadMode = 'disk' | 'memory';

/**
 * A memory load holds both data sets until it ends: what the loaded one took where it was backed
 * up (used_memory) is counted half again (allocator fragmentation, the parser's buffers), and both
 * must fit in 90 % of the container's limit (the replication and client buffers, a fork's
 * copy-on-write for the replicas' resync right after).
 */
const INCOMING_FACTOR = 1.5;
const LIMIT_SHARE = 0.9;
const mib = (b: number) => `${Math.round(b / 2 ** 20)} MiB`;

/**
 * Whether the server checks the end of a transfer (the EOF mark) before it swaps in the data set it
 * parsed from the socket. Redis 7.0+ and Valkey do; Redis 6.2 drops its old data set first, and a
 * crafted RDB that ends early, followed by other bytes, would stay loaded whatever came after.
 */
export const checksEndBeforeSwap = (server: {
  product?: string | undefined;
  version?: string | undefined;
}) => {
  if (server.product === 'valkey') return true;
  const major = Number(/^(\d+)\./.exec(server.version ?? '')?.[1]);
  return server.product === 'redis' && major >= 7;
};

/**
 * The mode for a load into a target, and why in words. An empty server (a new cluster's master,
 * bootstrap.fromBackup) has nothing to hold twice: it parses from the socket at about native
 * speed. One with data does too when its memory limit is known and holds both data sets with room
 * to spare; otherwise it receives the RDB to disk first, so that its memory never holds both.
 * Without a limit the node's memory is the bound, which nothing here can weigh: disk.
 */
export const loadModeFor = (t: {
  /** Which server the target is (INFO's redis_version, and Valkey's own). */
  server: { product?: string | undefined; version?: string | undefined };
  /** Keys the target holds. */
  keys: number;
  /** The target's resident set now (used_memory_rss). */
  rss?: number | undefined;
  /** The target container's memory limit, in bytes. */
  limit?: number | undefined;
  /** What the data set to load took in memory on the server it was backed up from. */
  incoming?: number | undefined;
}): { mode: LoadMode; why: string } => {
  const disk = (because: string) => ({ mode: 'disk' as const, why: `received to disk first: ${because}` });
  if (!checksEndBeforeSwap(t.server))
    return disk(
      `${t.server.product ?? 'the server'} ${t.server.version ?? '(version unknown)'} replaces its data before it checks the end of a transfer parsed from the socket`,
    );
  if (t.keys === 0) return { mode: 'memory', why: 'parsed from the socket: the master holds no keys' };
  if (t.limit === undefined)
    return disk('the master holds data and its container has no memory limit to weigh holding both against');
  if (t.incoming === undefined) return disk('the backup does not record how much memory its data set took');
  if (t.rss === undefined) return disk('the master does not report its memory');
  const need = t.rss + t.incoming * INCOMING_FACTOR;
  const sum = `${mib(t.rss)} in use + ${mib(t.incoming)} to load (x${INCOMING_FACTOR})`;
  return need <= t.limit * LIMIT_SHARE
    ? {
        mode: 'memory',
        why: `parsed from the socket beside the current data: ${sum} fit in ${LIMIT_SHARE * 100} % of the ${mib(t.limit)} memory limit`,
      }
    : disk(`${sum} exceed ${LIMIT_SHARE * 100} % of the ${mib(t.limit)} memory limit`);
};

/**
 * Why a data set cannot be loaded into a target at all, whatever the mode: alone it takes more than
 * 90 % of the container's memory limit. Loaded anyway, the master would be killed for memory, and
 * again at each restart from the data it had just loaded.
 */
export const memoryProblem = (t: { limit?: number | undefined; incoming?: number | undefined }) =>
  t.limit !== undefined && t.incoming !== undefined && t.incoming > t.limit * LIMIT_SHARE
    ? `the backup's data set took ${mib(t.incoming)} of memory where it was taken, more than ${LIMIT_SHARE * 100} % of the master's ${mib(t.limit)} memory limit: loading it would get the master killed for memory; raise spec.resources.limits.memory, or restore into a cluster with room for it`
    : undefined;

/**
 * Why a data set cannot be restored under the target's maxmemory: the master loads it as a replica
 * (replicas ignore maxmemory), and once it serves as master again Redis enforces the limit —
 * evicting keys of the restored data under an eviction policy, refusing writes that need memory
 * under noeviction. Weighed before the load with what the data set counted against maxmemory where
 * it was backed up (older manifests give only used_memory, which also counts buffers), and after
 * it, still a replica, with the target's own count. A data set that lived under a maxmemory no
 * larger than the target's may be over it by a little (overshoot): there Redis trimmed it on every
 * write as it will here (a full cache's count sits just above its limit, by the last writes), so
 * that much is not data a restore loses.
 */
export const maxmemoryProblem = (t: {
  /** The target master's maxmemory now (bytes; 0: none) and policy. */
  target?: { bytes: number; policy: string } | undefined;
  /** The source's maxmemory when the backup was taken, when recorded (0: none). */
  source?: number | undefined;
  counted?: number | undefined;
  used?: number | undefined;
  /** Whose count it is: the backup's (before the load) or the loaded data set's (after it). */
  of: 'backup' | 'loaded';
}) => {
  const m = t.target;
  const incoming = t.counted ?? t.used;
  if (!m || m.bytes === 0 || incoming === undefined || incoming <= m.bytes) return undefined;
  // Kept under a limit no larger: over only by the last writes before eviction caught up.
  if (
    t.source !== undefined &&
    t.source > 0 &&
    t.source <= m.bytes &&
    incoming <= m.bytes + overshoot(m.bytes)
  )
    return undefined;
  const count =
    t.of === 'loaded'
      ? `the loaded data set counts ${mib(incoming)} against maxmemory`
      : `the backup's data set counted ${mib(incoming)} against maxmemory where it was taken${t.counted === undefined ? ' (used_memory: this backup predates the finer figure)' : ''}`;
  return `${count}, more than the master's maxmemory of ${mib(m.bytes)}: ${overMaxmemory(m.policy)}; set spec.config.maxmemory to at least ${Math.ceil(incoming / 2 ** 20) + 1}mb and, once the master runs with it, restore again`;
};

/**
 * How far over its maxmemory a data set kept under it may count: Redis evicts before each write,
 * so a full one sits above by its last writes. More is data the limit would evict, or another
 * encoding's: refused.
 */
const overshoot = (maxmemory: number) => Math.max(2 ** 20, maxmemory / 100);

/** What Redis does with a master's data set over its maxmemory, by policy. */
const overMaxmemory = (policy: string) =>
  policy === 'noeviction'
    ? 'with maxmemory-policy noeviction the master would refuse every write that needs memory once it serves again'
    : policy.startsWith('volatile-')
      ? `with maxmemory-policy ${policy} Redis would evict restored keys that have a TTL as soon as the master serves again, and refuse writes that need memory once none is left`
      : `with maxmemory-policy ${policy} Redis would evict keys of the restored data as soon as the master serves again`;

/**
 * Replaces the data set of one running Redis server with an RDB, natively: the server replicates
 * from a feed (startFeed) that serves the RDB, loads it, and is then promoted back to master with
 * the loaded data. No restart, no file on the server's disk but the one it writes itself.
 *
 * All or nothing, either way (`mode`): `disk` (default) receives the RDB into a temporary file
 * and swaps the data set only once the whole file arrived (`repl-diskless-load disabled`);
 * `memory` parses the RDB straight from the socket into a second data set and keeps the old one
 * until the end (`swapdb`): about native load speed, but the server briefly holds both data sets.
 * A transfer that breaks leaves the data as it was. While loading the server is a replica: it
 * refuses writes.
 */
export const loadRdb = async (o: {
  target: LoadTarget;
  /** The address the feed listens on, reachable by the target. */
  feedHost: string;
  /** The address the target connects from (its pod IP). */
  targetPeer: string;
  open: () => Promise<{ rdb: Readable; size?: number }>;
  mode?: LoadMode;
  timeoutMs?: number;
  attempts?: number;
  onProgress?: (bytes: number) => void;
  signal?: AbortSignal;
  /**
   * Throws unless the caller still holds its lock (HandlerContext.fence): called right before each
   * command that changes the target's role. A run that stalled past its lease sends none of them,
   * not even the `REPLICAOF NO ONE` that puts back a master after a failed load — another holder
   * may have decided otherwise meanwhile.
   */
  fence?: () => void;
  /**
   * The feed's replication id, chosen by the caller so that it can record it before the target
   * sees it: the loaded data carries it (master_replid, then master_replid2 once promoted).
   */
  replid?: string;
  /**
   * Check, while the target is still a replica (which ignores maxmemory), that the loaded data set
   * fits its maxmemory (maxmemoryProblem, with the target's own count); one that does not fails the
   * load with `ExceedsMaxmemory` — promoted, it would be evicted or refuse writes. With the
   * source's maxmemory when the backup recorded it. Absent for a rollback, which must not be refused.
   * `record` is awaited before anything else: once the target is promoted its count no longer tells
   * (Redis evicts down to the limit), so a caller that stops here must find the refusal recorded.
   */
  maxmemoryGuard?: { sourceMaxmemory?: number | undefined; record?: (message: string) => Promise<void> };
}): Promise<{ bytes: number; keys: number; replid: string }> => {
  const deadline = Date.now() + (o.timeoutMs ?? 30 * 60_000);
  const feed = await startFeed({
    host: o.feedHost,
    allowFrom: o.targetPeer,
    password: o.target.password,
    open: o.open,
    ...(o.attempts === undefined ? {} : { attempts: o.attempts }),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
    ...(o.replid ? { replid: o.replid } : {}),
  });
  const control = await connectRedis({ ...o.target, connectTimeoutMs: 5000, commandTimeoutMs: 10_000 });
  let keepReplica = false;
  try {
    await control.command('CONFIG', 'SET', 'repl-diskless-load', o.mode === 'memory' ? 'swapdb' : 'disabled');
    await control.command('CONFIG', 'SET', 'masterauth', o.target.password);
    o.fence?.();
    await control.command('REPLICAOF', feed.host, String(feed.port));
    const aborted = new Promise<never>((_, reject) =>
      o.signal?.addEventListener(
        'abort',
        () => reject(new FeedError('Aborted', 'the restore was aborted', true)),
        {
          once: true,
        },
      ),
    );
    aborted.catch(() => undefined);
    const { bytes } = await Promise.race([feed.sent, aborted]);
    for (;;) {
      const link = await linkOf(control);
      if (link.up && !link.syncing && !link.loading && link.replid === feed.replid) {
        const over =
          o.maxmemoryGuard &&
          maxmemoryProblem({
            target: link.maxmemory,
            source: o.maxmemoryGuard.sourceMaxmemory,
            counted: link.counted,
            of: 'loaded',
          });
        if (over) {
          // Unrecorded, a promoted target's count would no longer tell (Redis evicts down to the
          // limit): until the refusal is recorded it stays a replica, for the next run to judge.
          keepReplica = true;
          await o.maxmemoryGuard?.record?.(over);
          keepReplica = false;
          throw new FeedError('ExceedsMaxmemory', over, false);
        }
        o.fence?.();
        await control.command('REPLICAOF', 'NO', 'ONE');
        return { bytes, keys: link.keys, replid: feed.replid };
      }
      if (o.signal?.aborted) throw new FeedError('Aborted', 'the restore was aborted', true);
      if (Date.now() > deadline)
        throw new FeedError('Timeout', 'the target did not finish loading the RDB in time', true);
      await sleep(100);
    }
  } catch (error) {
    // Not loaded: it keeps the data it had. A master again, for Tideway to fence and judge as
    // usual — unless the lease is gone (then the next holder judges it as it is).
    const mayAct = (() => {
      try {
        o.fence?.();
        return true;
      } catch {
        return false;
      }
    })();
    if (mayAct && !keepReplica) await control.command('REPLICAOF', 'NO', 'ONE').catch(() => undefined);
    throw error;
  } finally {
    control.close();
    await feed.close();
  }
};
