import type { RedisCluster } from '../api/generated.ts';
import type { LoadedCluster } from './load.ts';
import { FINALIZER } from './names.ts';

type Status = NonNullable<RedisCluster['status']>;

/**
 * For tests: a RedisCluster `r` in `ns` as the API server holds it. Each load reads the stored
 * status, and writeStatus is a read-modify-write on it — nothing written when mutate returns
 * undefined or the same status, as loadCluster's does; `onWrite` sees each status written.
 */
export const fakeClusterStore = (
  status: Status,
  o: {
    meta?: Partial<RedisCluster['metadata']>;
    spec?: Partial<RedisCluster['spec']>;
    onWrite?: (s: Status) => void;
  } = {},
) => {
  const stored = { status: structuredClone(status) };
  const object = (s: Status) =>
    ({
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      metadata: { name: 'r', namespace: 'ns', uid: 'u1', generation: 2, finalizers: [FINALIZER], ...o.meta },
      spec: { version: '7.0', replicas: 3, ...o.spec },
      status: structuredClone(s),
    }) as unknown as RedisCluster;
  const load = (): LoadedCluster => ({
    rc: object(stored.status),
    key: { namespace: 'ns', name: 'r' },
    regarding: {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      namespace: 'ns',
      name: 'r',
      uid: 'u1',
    },
    writeStatus: async (mutate) => {
      const next = mutate(structuredClone(stored.status));
      if (next !== undefined && JSON.stringify(next) !== JSON.stringify(stored.status)) {
        stored.status = structuredClone(next);
        o.onWrite?.(structuredClone(next));
      }
      return object(stored.status);
    },
  });
  return { stored, load };
};
