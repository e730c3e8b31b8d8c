import { createHash, randomBytes } from 'node:crypto';
import type { Backup, Restore } from '../../shared/api/generated.ts';
import type { ObjectStore } from '../../shared/backup/object-store.ts';
import { connectBus } from '../../shared/bus/connect.ts';
import { fromMessage } from '../../shared/events/nats-binding.ts';
import { STREAM, subjectFor } from '../../shared/events/subjects.ts';
import type { Condition } from '../../shared/kube/conditions.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { openSnapshot } from '../../shared/redis/snapshot.ts';
import { contentOf, fillRandom } from '../backup/support/dataset.ts';
import { binaryClient } from '../backup/support/resp.ts';
import { startServer, type TestServer } from '../backup/support/servers.ts';
import { type bed, until } from '../support/bed.ts';
import { ipOf, redisClusters, startFunction } from '../support/redis.ts';

const RESTORE = TIDEWAY_KINDS.Restore;
type Bed = ReturnType<typeof bed>;

/**
 * One replica of the restore function, as its own ServiceAccount: its feed listens on the test
 * bed's bridge address, which the pods reach (deployed, that is the function pod's IP).
 */
export const startRestoreFunction = (
  b: Bed,
  ns: string,
  id: string,
  env: Record<string, string> = {},
  serverless?: string,
) =>
  startFunction(
    b,
    ns,
    id,
    'restore',
    { TIDEWAY_RESTORE_FEED_HOST: b.info.network.hostIp, ...env },
    serverless,
  );

/** Restore objects in one namespace, as a user makes and reads them. */
export const restores = (b: Bed, ns: () => string) => {
  const get = async (name: string) =>
    (await b.custom.getNamespacedCustomObject({ ...RESTORE, namespace: ns(), name })) as Restore;
  return {
    get,
    create: (name: string, spec: Record<string, unknown>) =>
      b.custom.createNamespacedCustomObject({
        ...RESTORE,
        namespace: ns(),
        body: { apiVersion: 'tideway.dev/v1alpha1', kind: 'Restore', metadata: { name }, spec },
      }),
    /** Waits for an end (Completed, Failed, RolledBack); another end fails at once with the status. */
    ended: (name: string, phase: 'Completed' | 'Failed' | 'RolledBack', timeoutMs = 180_000) =>
      until(
        `Restore ${name} ${phase}`,
        async () => {
          const r = await get(name);
          const p = r.status?.phase;
          if (p === phase) return r;
          if (p && ['Completed', 'Failed', 'RolledBack'].includes(p))
            throw new Error(`Restore ${name} ended ${p}: ${JSON.stringify(r.status)}`);
          return undefined;
        },
        timeoutMs,
        250,
      ),
  };
};

export const conditionOf = (o: { status?: { conditions?: unknown } } | undefined, type: string) =>
  (o?.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type);

/** The recorded master of a cluster and a binary client for any of its pods. */
export const clusterData = (b: Bed, ns: () => string, cluster: string) => {
  const rdc = redisClusters(b, ns);
  const clientOf = async (pod: string) => {
    const p = (await rdc.pods(cluster)).find((x) => x.metadata?.name === pod);
    return binaryClient({ host: ipOf(p), port: 6379, password: await rdc.password(cluster) });
  };
  const master = async () => (await rdc.get(cluster)).status?.master ?? '';
  return {
    master,
    clientOf,
    pods: async () => (await rdc.pods(cluster)).map((p) => p.metadata?.name ?? ''),
    contentOfPod: async (pod: string) => {
      const c = await clientOf(pod);
      try {
        return await contentOf(c);
      } finally {
        c.close();
      }
    },
    /** INFO replication of one pod, as fields. */
    replicationOf: async (pod: string) => {
      const c = await clientOf(pod);
      try {
        const text = await c.text('INFO', 'replication');
        return Object.fromEntries(
          text
            .split('\r\n')
            .filter((l) => l.includes(':'))
            .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]),
        );
      } finally {
        c.close();
      }
    },
  };
};

/** The last CloudEvent of a type about one object, from the stream. */
export const lastOutcome = async (
  b: Bed,
  type: string,
  ref: { kind: string; namespace: string; name: string },
) => {
  const bus = await connectBus(b.info.natsUrl, 'test-restore-outcome');
  try {
    const msg = await bus.jsm.streams.getMessage(STREAM, { last_by_subj: subjectFor(type, ref) });
    return fromMessage(msg?.header, msg?.data ?? new Uint8Array());
  } finally {
    await bus.close();
  }
};

export const isSafety = (bk: Backup) => bk.metadata.labels?.['tideway.dev/safety-backup'] === 'true';

/**
 * An object and a manifest from elsewhere (a raw S3 key's restore reads them), uncompressed and
 * unencrypted: `rdb`, or `magic` and random bytes. changedAfter: the object no longer matches its
 * manifest (found only by reading it).
 */
export const putForeignObject = async (
  store: ObjectStore,
  dir: string,
  name: string,
  redis: Record<string, unknown>,
  o: { magic?: string; changedAfter?: boolean; rdb?: Buffer } = {},
) => {
  const rdb = o.rdb ?? Buffer.concat([Buffer.from(o.magic ?? 'REDIS0010'), randomBytes(4096)]);
  const k = `${dir}/${name}.rdb`;
  await store.put(k, rdb, 'application/octet-stream');
  const manifest = {
    format: 'tideway.dev/backup-manifest/v1',
    backup: { namespace: 'elsewhere', name, uid: 'x' },
    cluster: { namespace: 'elsewhere', name: 'newer' },
    redis,
    source: 'newer-0',
    object: k,
    size: rdb.length,
    rdbSize: rdb.length,
    sha256: createHash('sha256')
      .update(o.changedAfter ? Buffer.concat([rdb, Buffer.from('x')]) : rdb)
      .digest('hex'),
    compression: 'none',
    encryption: null,
    startedAt: new Date().toISOString(),
    created: new Date().toISOString(),
  };
  await store.put(`${dir}/${name}.manifest.json`, Buffer.from(JSON.stringify(manifest)), 'application/json');
  return k;
};

/** An RDB of `mib` keys of 1 MiB random bytes, from a redis-server 7.0 of its own (kept in `servers`). */
export const randomRdb = async (servers: TestServer[], mib: number) => {
  const src = await startServer({});
  servers.push(src);
  const c = await src.client();
  try {
    await fillRandom(c, mib, 'random');
  } finally {
    c.close();
  }
  const snap = await openSnapshot({ host: src.host, port: src.port });
  const chunks: Buffer[] = [];
  for await (const chunk of snap.rdb) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};
