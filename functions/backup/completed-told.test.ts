import type { CloudEvent } from 'cloudevents';
import { describe, expect, it, vi } from 'vitest';
import { fakeHandlerContext, memoryCustomObjects, notFound } from '../../shared/runtime/fixture.ts';

// A backup that is stored and recorded Completed, whose telling (its CloudEvent, its Events)
// fails: the attempt has succeeded, and nothing may turn it into a failed one. The snapshot and
// the upload are stand-ins here (run.ts's takeBackup, the target); the handler around them is real.
const NOW = new Date('2026-11-28T08:00:00Z');
const STORE = {
  s3: {
    bucket: 'bkp',
    endpoint: 'http://127.0.0.1:9',
    forcePathStyle: true,
    credentialsSecret: { name: 's3' },
  },
};
const SOURCE = { pod: 'cache-1', product: 'redis', version: '7.0.15' };

vi.mock('./targets/index.ts', () => ({
  loadTarget: async () => ({
    ref: { kind: 'RedisCluster', name: 'cache' },
    object: {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      metadata: { name: 'cache', uid: 'u-rc' },
    },
    defaultStore: STORE,
    sources: async () => ({ list: [SOURCE], none: '' }),
    open: async () => {
      throw new Error('not used: takeBackup stands in');
    },
    sourceLost: () => undefined,
  }),
}));
vi.mock('./run.ts', async (original) => ({
  ...(await original<typeof import('./run.ts')>()),
  takeBackup: async (o: { onStart: () => Promise<void> }) => {
    await o.onStart();
    return {
      size: 10,
      rdbSize: 20,
      sha256: 'a'.repeat(64),
      parts: 1,
      source: SOURCE,
      keys: { object: 'prod/cache/b1.rdb.zst', manifest: 'prod/cache/b1.manifest.json' },
      location: 's3://bkp/prod/cache/b1.rdb.zst',
      manifest: { redis: { version: '7.0.15' }, takenAt: NOW.toISOString() },
    };
  },
}));
const { handler } = await import('./index.ts');

const world = (attempts: number | undefined, o: { completedAnswerLost?: boolean } = {}) => {
  const objects = memoryCustomObjects();
  objects.put('backups', {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Backup',
    metadata: {
      name: 'b1',
      namespace: 'prod',
      uid: 'u-b1',
      generation: 1,
      resourceVersion: '3',
      creationTimestamp: NOW.toISOString(),
      finalizers: ['tideway.dev/backup-object'],
    },
    spec: { cluster: { name: 'cache' } },
    status:
      attempts === undefined
        ? {}
        : { phase: 'Running', attempts, store: STORE, startedAt: NOW.toISOString() },
  } as never);
  const secrets: Record<string, Record<string, string>> = {
    s3: {
      AWS_ACCESS_KEY_ID: Buffer.from('id').toString('base64'),
      AWS_SECRET_ACCESS_KEY: Buffer.from('key').toString('base64'),
    },
  };
  const api = {
    ...objects.api,
    // The Completed write is applied, and its answer lost (a timeout): the handler sees an error.
    replaceNamespacedCustomObjectStatus: async (a: { body: { status?: { phase?: string } } }) => {
      const written = await objects.api.replaceNamespacedCustomObjectStatus(a as never);
      if (o.completedAnswerLost && a.body.status?.phase === 'Completed') throw new Error('socket hang up');
      return written;
    },
    readNamespacedSecret: async (a: { name: string }) => {
      const data = secrets[a.name];
      if (!data) throw notFound();
      return { metadata: { name: a.name, namespace: 'prod' }, data };
    },
    createNamespacedEvent: async () => ({}),
  };
  const { ctx } = fakeHandlerContext(api, {
    function: 'backup',
    now: NOW,
    maxAttempts: 50,
    env: { TIDEWAY_BACKUP_ATTEMPTS: '5' },
  });
  const told: string[] = [];
  let busFails = true;
  Object.assign(ctx, {
    publisher: {
      publish: async (e: CloudEvent<unknown>) => {
        if (busFails) throw new Error('nats: timeout');
        told.push(e.type);
        return { duplicate: false, seq: told.length };
      },
    },
  });
  const event = {
    id: 'e1',
    type: 'dev.tideway.resource.updated',
    source: '/watcher',
    kind: 'Backup',
    namespace: 'prod',
    name: 'b1',
    uid: 'u-b1',
  } as unknown as CloudEvent<unknown>;
  const status = () => (objects.get('backups', 'b1') as { status: Record<string, unknown> }).status;
  const busBack = () => {
    busFails = false;
  };
  return { run: () => handler(event, ctx), status, told, busBack };
};

describe('a stored backup whose announcement fails', () => {
  it.each([
    ['its first attempt', undefined],
    ['its last attempt', 4],
  ])(
    'on %s: stays Completed, the failure retried as such; the next delivery announces it',
    async (_, attempts) => {
      const w = world(attempts);
      await expect(w.run()).rejects.toThrow('nats: timeout');
      expect(w.status()).toMatchObject({
        phase: 'Completed',
        conditions: [expect.objectContaining({ type: 'Completed', status: 'True' })],
      });
      expect(w.status()).not.toHaveProperty('error');
      expect(w.status()).not.toHaveProperty('pendingAbort');
      w.busBack();
      expect(await w.run()).toEqual({ kind: 'done' });
      expect(w.told).toEqual(['dev.tideway.backup.completed']);
      expect(w.status()).toMatchObject({ phase: 'Completed' });
    },
  );

  it('whose Completed write went through but its answer was lost: no failed attempt is written over it', async () => {
    const w = world(4, { completedAnswerLost: true });
    w.busBack();
    await expect(w.run()).rejects.toThrow('socket hang up');
    expect(w.status()).toMatchObject({
      phase: 'Completed',
      conditions: [expect.objectContaining({ type: 'Completed', status: 'True' })],
    });
    expect(w.status()).not.toHaveProperty('error');
    expect(w.told).toEqual([]);
  });
});
