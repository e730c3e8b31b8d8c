import { describe, expect, it } from 'vitest';
import type { LoadedBackup } from '../../shared/backup/kube.ts';
import type { ResolvedStore } from '../../shared/backup/store-config.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { openTimed, storeSpecOf, takeBackup } from './run.ts';
import type { BackupTarget, OpenedSnapshot, SnapshotSource } from './targets/types.ts';

const store = (bucket: string) => ({ s3: { bucket, credentialsSecret: { name: 's3-creds' } } });
const loaded = (spec: object, status?: object) =>
  ({
    backup: { spec: { cluster: { name: 'cache' }, ...spec }, ...(status ? { status } : {}), metadata: {} },
  }) as unknown as LoadedBackup;
const target = (defaultStore?: object) =>
  ({ ref: { kind: 'RedisCluster', name: 'cache' }, defaultStore }) as unknown as BackupTarget;

describe('the store a Backup writes to', () => {
  it('is its own, else the one an earlier attempt recorded, else its cluster’s current default', () => {
    expect(storeSpecOf(loaded({ store: store('own') }), target(store('cluster')))).toEqual(store('own'));
    // The cluster's store changed after attempt 1 wrote to old-bucket: attempt 2 (and the
    // finalizer) keep to old-bucket, so nothing it stored is left where no one looks.
    expect(storeSpecOf(loaded({}, { store: store('old-bucket') }), target(store('new-bucket')))).toEqual(
      store('old-bucket'),
    );
    expect(storeSpecOf(loaded({}), target(store('cluster')))).toEqual(store('cluster'));
    expect(() => storeSpecOf(loaded({}), target())).toThrow(expect.objectContaining({ reason: 'NoStore' }));
  });
});

describe('when a snapshot’s data is from', () => {
  it('is when it was asked for, not when it opened (a disk-based transfer opens after the BGSAVE)', async () => {
    let now = Date.parse('2026-11-27T10:00:00Z');
    const clock = () => new Date(now);
    const snap = { total: 1 } as unknown as OpenedSnapshot;
    const slow = {
      open: async () => {
        now += 4 * 60_000; // the source's BGSAVE
        return snap;
      },
    };
    const opened = await openTimed(slow, {} as SnapshotSource, new AbortController().signal, clock);
    expect(opened).toEqual({ snap, takenAt: new Date('2026-11-27T10:00:00Z') });
  });
});

// Where an attempt talks to the store relative to the cluster's lock: a store slow to answer must
// never hold the lock that health's failovers and reconcile wait for.
describe('takeBackup and the cluster lock', () => {
  it('cleans up a left-over upload before taking the cluster lock, and starts the attempt under it', async () => {
    const trace: string[] = [];
    let held = false;
    const ctx = {
      signal: new AbortController().signal,
      clock: () => new Date('2026-11-28T08:00:00Z'),
      env: {},
      fence: () => undefined,
      log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
      withLock: async (_key: string, _o: unknown, fn: () => Promise<unknown>) => {
        held = true;
        trace.push('lock');
        try {
          return { value: await fn() };
        } finally {
          held = false;
          trace.push('unlock');
        }
      },
    } as unknown as HandlerContext;
    const resolved = {
      prefix: '',
      compression: 'zstd',
      store: {
        abortUnfinished: async () => {
          trace.push(held ? 'abortUnfinished under the lock' : 'abortUnfinished');
          return 0;
        },
      },
    } as unknown as ResolvedStore;
    const target = {
      ref: { kind: 'RedisCluster', name: 'cache' },
      object: { metadata: { name: 'cache' } },
      sources: async () => ({ list: [{ pod: 'cache-1', product: 'redis', version: '7.0' }], none: '' }),
      open: async () => {
        trace.push('open');
        throw new Error('no snapshot here');
      },
      sourceLost: () => undefined,
    } as unknown as BackupTarget;
    const loaded = {
      key: { namespace: 'prod', name: 'b1' },
      backup: { metadata: { uid: 'u-b1' }, spec: { cluster: { name: 'cache' } } },
    } as unknown as LoadedBackup;
    await expect(
      takeBackup({
        ctx,
        loaded,
        target,
        spec: { s3: { bucket: 'b', credentialsSecret: { name: 's3' } } } as never,
        resolved,
        started: new Date(),
        onStart: async () => void trace.push(held ? 'onStart under the lock' : 'onStart'),
        onSource: async () => {},
        onProgress: async () => {},
        onSourceLost: async () => {},
      }),
    ).rejects.toThrow('no snapshot here');
    expect(trace).toEqual(['abortUnfinished', 'lock', 'onStart under the lock', 'open', 'unlock']);
  });

  it('counts an attempt whose store fails at the cleanup: a store that stays down ends the Backup after its attempts', async () => {
    const trace: string[] = [];
    const ctx = {
      signal: new AbortController().signal,
      clock: () => new Date('2026-11-28T08:00:00Z'),
      env: {},
      fence: () => undefined,
      withLock: async () => {
        trace.push('lock');
        return undefined;
      },
    } as unknown as HandlerContext;
    const down = Object.assign(new Error('connect ECONNREFUSED'), { retry: true });
    await expect(
      takeBackup({
        ctx,
        loaded: {
          key: { namespace: 'prod', name: 'b1' },
          backup: { metadata: { uid: 'u-b1' }, spec: { cluster: { name: 'cache' } } },
        } as unknown as LoadedBackup,
        target: { ref: { kind: 'RedisCluster', name: 'cache' } } as unknown as BackupTarget,
        spec: { s3: { bucket: 'b', credentialsSecret: { name: 's3' } } } as never,
        resolved: {
          store: {
            abortUnfinished: async () => {
              throw down;
            },
          },
        } as unknown as ResolvedStore,
        started: new Date(),
        onStart: async () => void trace.push('onStart'),
        onSource: async () => {},
        onProgress: async () => {},
        onSourceLost: async () => {},
      }),
    ).rejects.toBe(down);
    expect(trace).toEqual(['onStart']);
  });
});
