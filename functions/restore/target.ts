import { connectRedis } from '../../shared/redis/client.ts';
import { maxmemoryCount, parseInfo, parseReplication, serverVersion } from '../../shared/redis/info.ts';
import { passwordsOf } from '../../shared/rediscluster/auth.ts';
import { listPods, readAuth } from '../../shared/rediscluster/kube.ts';
import { REDIS_PORT } from '../../shared/rediscluster/names.ts';
import { type Instance, probeInstances } from '../../shared/rediscluster/probe.ts';
import { RestoreError } from './errors.ts';
import type { Run } from './run.ts';
import type { Before } from './state.ts';
import type { TargetNow } from './verdict.ts';

/** The cluster's instances, probed with its passwords (each says which one it took). */
export const probeCluster = async (run: Run) => {
  const passwords = passwordsOf(await readAuth(run.ctx.kube, run.rc, false));
  const instances = await probeInstances(
    run.rc.metadata.name,
    await listPods(run.ctx.kube, run.rc),
    passwords,
  );
  return { instances, passwords };
};

export type Target = { pod: string; ip: string; password: string; instance: Instance };

/**
 * The master a restore loads into: the recorded one (status.master), answering as a master. A
 * new cluster's master is empty; any other state (no master yet, a master that does not serve)
 * is waited for.
 */
export const servingMaster = async (run: Run): Promise<Target> => {
  const pod = run.rc.status?.master;
  if (!pod)
    throw new RestoreError('NoMaster', `RedisCluster ${run.rc.metadata.name} has no master yet`, true);
  const { instances, passwords } = await probeCluster(run);
  const m = instances.find((i) => i.pod === pod);
  if (!m?.ip || m.terminating || m.replication?.role !== 'master' || m.password === undefined)
    throw new RestoreError(
      'NoMaster',
      `the master of RedisCluster ${run.rc.metadata.name}, ${pod}, does not serve (${m?.error ?? (m?.replication ? `it answers as a ${m.replication.role}` : 'no pod or no address')})`,
      true,
    );
  return { pod, ip: m.ip, password: passwords[m.password] ?? '', instance: m };
};

/** One instance's INFO, read as a load's target: its replication, whether it loads, its data. */
export const inspect = async (ip: string, password: string) => {
  const c = await connectRedis({
    host: ip,
    port: REDIS_PORT,
    password,
    connectTimeoutMs: 3000,
    commandTimeoutMs: 10_000,
  });
  try {
    const sections = parseInfo(String(await c.command('INFO', 'all')));
    const r = parseReplication(sections);
    const persistence = sections.persistence ?? {};
    const keys = Object.values(sections.keyspace ?? {}).reduce(
      (n, db) => n + Number(/(?:^|,)keys=(\d+)/.exec(db)?.[1] ?? 0),
      0,
    );
    const now: TargetNow = {
      role: r.role,
      replid: r.replid,
      replid2: r.role === 'master' ? r.replid2 : r.replid2 || undefined,
      masterHost: r.role === 'replica' ? r.masterHost : undefined,
      loading: persistence.loading === '1' || persistence.async_loading === '1',
    };
    return {
      now,
      offset: r.offset,
      keys,
      runId: sections.server?.run_id ?? '',
      ...serverVersion(sections),
      ...maxmemoryCount(sections.memory),
    };
  } finally {
    c.close();
  }
};

/** INFO of the target, or undefined when it does not answer (a restart, a lost pod). */
export const inspectOrUndefined = (ip: string, password: string) =>
  inspect(ip, password).catch(() => undefined);

/** What a master is before a load: what tells its own data from the loaded, and what to put back. */
export const beforeLoad = async (t: Target): Promise<Before> => {
  const seen = await inspect(t.ip, t.password);
  const c = await connectRedis({
    host: t.ip,
    port: REDIS_PORT,
    password: t.password,
    connectTimeoutMs: 3000,
  });
  let disklessLoad: string | undefined;
  try {
    const v = await c.command('CONFIG', 'GET', 'repl-diskless-load');
    disklessLoad = Array.isArray(v) && v[1] !== undefined ? String(v[1]) : undefined;
  } finally {
    c.close();
  }
  return {
    runId: seen.runId,
    replid: seen.now.replid,
    ...(seen.now.replid2 ? { replid2: seen.now.replid2 } : {}),
    offset: seen.offset,
    keys: seen.keys,
    ...(disklessLoad ? { disklessLoad } : {}),
  };
};

/** Runs control commands on the target (REPLICAOF NO ONE, CONFIG SET). */
export const command = async (ip: string, password: string, ...args: string[]) => {
  const c = await connectRedis({
    host: ip,
    port: REDIS_PORT,
    password,
    connectTimeoutMs: 3000,
    commandTimeoutMs: 10_000,
  });
  try {
    return await c.command(...args);
  } finally {
    c.close();
  }
};
