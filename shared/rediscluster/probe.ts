import type { V1Pod } from '@kubernetes/client-node';
import { connectRedis, type RedisClient } from '../redis/client.ts';
import { parseInfo, parseReplication, type Replication, serverVersion } from '../redis/info.ts';
import { LABEL, ordinalOf, REDIS_PORT, type Role } from './names.ts';

/** One instance as the API server and the server itself describe it. */
export type Instance = {
  pod: string;
  ordinal: number;
  ip?: string;
  /** The pod's Ready condition. */
  podReady: boolean;
  /** Role label on the pod (what the Services follow). */
  labelledRole?: Role;
  /** Deleted, on its way out. */
  terminating: boolean;
  /** From INFO, when the server answered. */
  replication?: Replication;
  /** Keys in all databases (INFO keyspace): 0 means it has no data a full sync could wipe. */
  keys?: number;
  version?: string;
  product?: 'redis' | 'valkey';
  error?: string;
};

const podReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * What one INFO says of an instance. A server loading its data set answers with a provisional
 * replication id and offset: it does not count as answering until it has loaded.
 */
export const fromInfo = (
  info: string,
): Pick<Instance, 'replication' | 'keys' | 'version' | 'product' | 'error'> => {
  const sections = parseInfo(info);
  const persistence = sections.persistence ?? {};
  if (persistence.loading === '1' || persistence.async_loading === '1')
    return { error: 'loading its data set' };
  const v = serverVersion(sections);
  const keys = Object.values(sections.keyspace ?? {}).reduce(
    (n, db) => n + Number(/(?:^|,)keys=(\d+)/.exec(db)?.[1] ?? 0),
    0,
  );
  return { replication: parseReplication(sections), keys, version: v.version, product: v.product };
};

/** INFO of every pod that has an IP, in parallel, each bounded by a short timeout. */
export const probeInstances = async (
  clusterName: string,
  pods: readonly V1Pod[],
  password: string,
  timeoutMs = 1500,
): Promise<Instance[]> =>
  Promise.all(
    pods
      .map((p) => ({ p, ordinal: ordinalOf(clusterName, p.metadata?.name ?? '') }))
      .filter(({ ordinal }) => ordinal >= 0)
      .sort((a, b) => a.ordinal - b.ordinal)
      .map(async ({ p, ordinal }): Promise<Instance> => {
        const role = p.metadata?.labels?.[LABEL.role];
        const base: Instance = {
          pod: p.metadata?.name ?? '',
          ordinal,
          ...(p.status?.podIP ? { ip: p.status.podIP } : {}),
          podReady: podReady(p),
          ...(role === 'master' || role === 'replica' ? { labelledRole: role } : {}),
          terminating: Boolean(p.metadata?.deletionTimestamp),
        };
        if (!base.ip || p.status?.phase !== 'Running') return base;
        let client: RedisClient | undefined;
        try {
          client = await connectRedis({
            host: base.ip,
            port: REDIS_PORT,
            password,
            connectTimeoutMs: timeoutMs,
            commandTimeoutMs: timeoutMs,
          });
          return { ...base, ...fromInfo(String(await client.command('INFO', 'all'))) };
        } catch (error) {
          return { ...base, error: error instanceof Error ? error.message : String(error) };
        } finally {
          client?.close();
        }
      }),
  );

/** Runs one command on one instance. */
export const onInstance = async <T>(
  ip: string,
  password: string,
  fn: (c: RedisClient) => Promise<T>,
  timeoutMs = 5000,
): Promise<T> => {
  const client = await connectRedis({
    host: ip,
    port: REDIS_PORT,
    password,
    connectTimeoutMs: timeoutMs,
    commandTimeoutMs: timeoutMs,
  });
  try {
    return await fn(client);
  } finally {
    client.close();
  }
};
