import { createHash } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { bytesOf } from '../kube/quantity.ts';
import { connectRedis, type RedisClient } from '../redis/client.ts';
import {
  maxmemoryCount,
  parseInfo,
  parseReplication,
  type Replication,
  serverVersion,
} from '../redis/info.ts';
import { RespError } from '../redis/resp.ts';
import { LABEL, ordinalOf, REDIS_CONTAINER, REDIS_PORT, type Role } from './names.ts';

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
  /** The server process (INFO run_id): another one means it restarted since. */
  runId?: string;
  error?: string;
  /**
   * INFO memory: bytes the data set takes (used_memory), the process's resident set
   * (used_memory_rss), and what Redis weighs against maxmemory (used_memory less the replication
   * and AOF buffers it leaves out, mem_not_counted_for_evict).
   */
  memory?: { used: number; rss: number; counted: number };
  /** CONFIG maxmemory (bytes; 0: none) and maxmemory-policy, as INFO memory reports them. */
  maxmemory?: { bytes: number; policy: string };
  /** The redis container's memory limit in the pod spec, in bytes: what it is killed above. */
  memoryLimit?: number;
  /** Which of the passwords given to the probe the server accepted (an index, never the password). */
  password?: number;
  /** With inspectAuth: SHA-256 hashes of the passwords it accepts and of its masterauth. */
  auth?: { accepts: string[]; masterauth: string };
  /** With inspectQuorum: min-replicas-to-write and min-replicas-max-lag as the server runs them. */
  quorum?: { toWrite: number; maxLag: number };
};

/** The pod's Ready condition is True (kubelet's readiness probe passes). */
export const podReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * What one INFO says of an instance. A server loading its data set answers with a provisional
 * replication id and offset: it does not count as answering until it has loaded.
 */
export const fromInfo = (
  info: string,
): Pick<
  Instance,
  'replication' | 'keys' | 'version' | 'product' | 'error' | 'runId' | 'memory' | 'maxmemory'
> => {
  const sections = parseInfo(info);
  const persistence = sections.persistence ?? {};
  if (persistence.loading === '1' || persistence.async_loading === '1')
    return { error: 'loading its data set' };
  const v = serverVersion(sections);
  const keys = Object.values(sections.keyspace ?? {}).reduce(
    (n, db) => n + Number(/(?:^|,)keys=(\d+)/.exec(db)?.[1] ?? 0),
    0,
  );
  return {
    replication: parseReplication(sections),
    keys,
    version: v.version,
    product: v.product,
    ...(sections.server?.run_id ? { runId: sections.server.run_id } : {}),
    ...memoryOf(sections.memory),
  };
};

const memoryOf = (m: Record<string, string> | undefined): Pick<Instance, 'memory' | 'maxmemory'> => {
  if (!m) return {};
  const used = Number(m.used_memory);
  const rss = Number(m.used_memory_rss);
  const { maxmemory, counted } = maxmemoryCount(m);
  return {
    ...(Number.isFinite(used) && Number.isFinite(rss) ? { memory: { used, rss, counted } } : {}),
    ...(Number.isFinite(maxmemory.bytes) && maxmemory.policy ? { maxmemory } : {}),
  };
};

/** The memory limit of the pod's redis container, when it has one the API server would take. */
const memoryLimitOf = (p: V1Pod): Pick<Instance, 'memoryLimit'> => {
  const q = p.spec?.containers?.find((c) => c.name === REDIS_CONTAINER)?.resources?.limits?.memory;
  const bytes = q === undefined ? undefined : bytesOf(String(q));
  return bytes ? { memoryLimit: bytes } : {};
};

/** The server refused the password (any other error is not about the password). */
const isWrongPassword = (error: unknown) =>
  error instanceof RespError && /^(WRONGPASS|ERR invalid password)/.test(error.message);

/**
 * Connects with the first of `passwords` the server accepts: while a password rotates, or after a
 * pod restarted before its kubelet refreshed the password file, instances accept different ones.
 */
const connectWithAny = async (ip: string, passwords: readonly string[], timeoutMs: number) => {
  for (const [index, password] of passwords.entries()) {
    try {
      const client = await connectRedis({
        host: ip,
        port: REDIS_PORT,
        password,
        connectTimeoutMs: timeoutMs,
        commandTimeoutMs: timeoutMs,
      });
      return { client, index };
    } catch (error) {
      if (!isWrongPassword(error) || index === passwords.length - 1) throw error;
    }
  }
  throw new Error('no password to try');
};

/** The write quorum the server runs with (CONFIG GET takes a pattern on every version). */
const quorumOf = async (client: RedisClient): Promise<NonNullable<Instance['quorum']>> => {
  const reply = await client.command('CONFIG', 'GET', 'min-replicas-*');
  const flat = Array.isArray(reply) ? reply.map(String) : [];
  const get = (name: string) => {
    const at = flat.indexOf(name);
    const n = at >= 0 && at % 2 === 0 ? Number(flat[at + 1]) : Number.NaN;
    if (!Number.isInteger(n)) throw new Error(`CONFIG GET: no ${name}`);
    return n;
  };
  return { toWrite: get('min-replicas-to-write'), maxLag: get('min-replicas-max-lag') };
};

/** SHA-256 in hex, as ACL GETUSER lists passwords: compared, never the passwords themselves. */
export const passwordHash = (password: string) => createHash('sha256').update(password).digest('hex');

/** The passwords the default user accepts and the masterauth in use, as hashes. */
const authOf = async (client: RedisClient): Promise<NonNullable<Instance['auth']>> => {
  const user = await client.command('ACL', 'GETUSER', 'default');
  const fields = Array.isArray(user) ? user : [];
  const at = fields.findIndex((f) => String(f) === 'passwords');
  const passwords = at >= 0 && Array.isArray(fields[at + 1]) ? (fields[at + 1] as unknown[]).map(String) : [];
  const masterauth = await client.command('CONFIG', 'GET', 'masterauth');
  const value = Array.isArray(masterauth) ? String(masterauth[1] ?? '') : '';
  return { accepts: passwords, masterauth: passwordHash(value) };
};

/**
 * INFO of every pod that has an IP, in parallel, each bounded by a short timeout. With
 * `inspectAuth`, also which passwords each accepts (for the password rotation); with
 * `inspectQuorum`, the write quorum it runs with (quorum.ts).
 */
export const probeInstances = async (
  clusterName: string,
  pods: readonly V1Pod[],
  passwords: readonly string[],
  timeoutMs = 1500,
  o: { inspectAuth?: boolean; inspectQuorum?: boolean } = {},
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
          ...memoryLimitOf(p),
        };
        if (!base.ip || p.status?.phase !== 'Running') return base;
        let client: RedisClient | undefined;
        try {
          const connected = await connectWithAny(base.ip, passwords, timeoutMs);
          client = connected.client;
          const info = fromInfo(String(await client.command('INFO', 'all')));
          return {
            ...base,
            ...info,
            password: connected.index,
            // A server without ACLs (an image older than Redis 6) still serves: it just cannot rotate.
            ...(o.inspectAuth && info.replication
              ? await authOf(client).then(
                  (auth) => ({ auth }),
                  () => ({}),
                )
              : {}),
            // Unknown when the server does not say: nothing is set on it then (quorum.ts).
            ...(o.inspectQuorum && info.replication
              ? await quorumOf(client).then(
                  (quorum) => ({ quorum }),
                  () => ({}),
                )
              : {}),
          };
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
