import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import type { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { fakeHandlerContext, memoryCustomObjects, notFound } from '../../shared/runtime/fixture.ts';
import { handler } from './index.ts';

// The backup handler's decisions before a snapshot, on an in-memory API: a cluster with no pod to
// take one from, and a Backup whose attempts are used up. The store is never reached, but by the
// abort a failure owes, which goes to a port on 127.0.0.1 that was just closed.
const NOW = new Date('2026-11-28T08:00:00Z');

const closedPort = async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
};

const world = async (o: { createdMinutesAgo: number; attempts?: number; delivery?: number }) => {
  const objects = memoryCustomObjects();
  const put = objects.put;
  const store = {
    s3: {
      bucket: 'bkp',
      endpoint: await closedPort(),
      forcePathStyle: true,
      credentialsSecret: { name: 's3' },
    },
  };
  put('backups', {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Backup',
    metadata: {
      name: 'b1',
      namespace: 'prod',
      uid: 'u-b1',
      generation: 1,
      resourceVersion: '3',
      creationTimestamp: new Date(NOW.getTime() - o.createdMinutesAgo * 60_000).toISOString(),
      finalizers: ['tideway.dev/backup-object'],
    },
    spec: { cluster: { name: 'cache' } },
    status:
      o.attempts === undefined
        ? {}
        : {
            phase: 'Running',
            attempts: o.attempts,
            startedAt: '2026-11-28T07:00:00Z',
            store,
            error: { reason: 'SourceLost', message: 'the stream ended early' },
          },
  } as never);
  put('redisclusters', {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: { name: 'cache', namespace: 'prod', uid: 'u-rc', generation: 1 },
    spec: { auth: { secretName: 'cache-pw' }, backup: { store } },
    status: {},
  } as never);
  const secrets: Record<string, Record<string, string>> = {
    'cache-pw': { password: Buffer.from('pw').toString('base64') },
    s3: {
      AWS_ACCESS_KEY_ID: Buffer.from('id').toString('base64'),
      AWS_SECRET_ACCESS_KEY: Buffer.from('key').toString('base64'),
    },
  };
  const events: string[] = [];
  const api = {
    ...objects.api,
    readNamespacedSecret: async (a: { name: string }) => {
      const data = secrets[a.name];
      if (!data) throw notFound();
      return { metadata: { name: a.name, namespace: 'prod' }, data };
    },
    // No pod: nothing to take a snapshot from.
    listNamespacedPod: async () => ({ items: [] }),
    createNamespacedEvent: async (a: { body: { reason: string } }) => {
      events.push(a.body.reason);
      return {};
    },
  };
  const { ctx, published } = fakeHandlerContext(api, {
    function: 'backup',
    now: NOW,
    maxAttempts: 50,
    env: { TIDEWAY_BACKUP_ATTEMPTS: '5' },
  });
  if (o.delivery !== undefined) Object.assign(ctx, { attempt: o.delivery });
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
  return { ctx, event, status, events, published, handler: () => handler(event, ctx) };
};

describe('the backup handler, before a snapshot', () => {
  it('waits for a source for 10 minutes after the Backup was made, counting no attempt', async () => {
    const w = await world({ createdMinutesAgo: 9 });
    expect(await w.handler()).toMatchObject({ kind: 'retry', afterMs: 5000 });
    expect(w.status()).toMatchObject({
      phase: 'Pending',
      conditions: [
        expect.objectContaining({ type: 'Completed', status: 'False', reason: 'WaitingForSource' }),
      ],
    });
    expect(w.status().attempts).toBeUndefined();
    expect(w.published).toEqual([]);
  });

  it('then fails with NoSource, saying why none serves', async () => {
    const w = await world({ createdMinutesAgo: 11 });
    expect(await w.handler()).toEqual({ kind: 'done' });
    expect(w.status()).toMatchObject({
      phase: 'Failed',
      error: {
        reason: 'NoSource',
        message: expect.stringMatching(/^RedisCluster cache has no instance to take a snapshot from: /),
      },
    });
    expect(w.published).toEqual(['dev.tideway.backup.failed']);
    expect(w.events).toContain('Failed');
  });

  it('fails with RetriesExhausted once its attempts are used up, source or not, and owes the abort the store did not take', async () => {
    const w = await world({ createdMinutesAgo: 30, attempts: 5 });
    expect(await w.handler()).toMatchObject({ kind: 'retry', afterMs: 10_000, reason: 'AbortPending' });
    expect(w.status()).toMatchObject({
      phase: 'Failed',
      error: {
        reason: 'RetriesExhausted',
        message:
          'gave up after 5 attempts that did not finish (the function was stopped or crashed): the stream ended early',
      },
      pendingAbort: expect.stringMatching(/b1/),
    });
    expect(w.published).toEqual(['dev.tideway.backup.failed']);
  });

  it('after an attempt (its source lost mid-stream), waits however old the Backup is, until its retries would run out', async () => {
    const w = await world({ createdMinutesAgo: 30, attempts: 1, delivery: 48 });
    expect(await w.handler()).toMatchObject({ kind: 'retry', reason: 'WaitingForSource' });
    expect(w.status()).toMatchObject({ attempts: 1, phase: 'Pending' });
    const last = await world({ createdMinutesAgo: 30, attempts: 1, delivery: 49 });
    expect(await last.handler()).toEqual({ kind: 'done' });
    expect(last.status()).toMatchObject({ phase: 'Failed', error: { reason: 'NoSource' } });
  });

  it('with attempts left and no source, waits, as a first attempt does', async () => {
    const w = await world({ createdMinutesAgo: 9, attempts: 4 });
    expect(await w.handler()).toMatchObject({ kind: 'retry', reason: 'WaitingForSource' });
    expect(w.status()).toMatchObject({ attempts: 4, phase: 'Pending' });
  });
});
