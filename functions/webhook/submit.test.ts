import { describe, expect, it } from 'vitest';
import type { Intent } from './intent.ts';
import type { WebhookKube } from './kube.ts';
import { localMutex } from './mutex.ts';
import { submit } from './submit.ts';

type Obj = Record<string, unknown> & { metadata: { name: string; namespace?: string } };

/** The API server in memory: a cluster c with one Completed Backup; `pause` holds one call. */
const apiServer = () => {
  const objects = new Map<string, Obj>([
    [
      'RedisCluster/d/c',
      {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'RedisCluster',
        metadata: { name: 'c', namespace: 'd' },
        spec: { version: '7.0' },
      },
    ],
    [
      'Backup/d/b1',
      {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'Backup',
        metadata: { name: 'b1', namespace: 'd' },
        spec: { cluster: { name: 'c' } },
        status: { phase: 'Completed' },
      },
    ],
  ]);
  const pauses = new Map<string, Promise<void>>();
  /** The first call of a paused kind waits; later ones pass. */
  const at = async (call: string) => {
    const p = pauses.get(call);
    pauses.delete(call);
    await p;
  };
  const kube: WebhookKube = {
    webhookSecret: async () => undefined,
    get: async (kind, ns, name) => {
      await at(`get ${kind}`);
      return structuredClone(objects.get(`${kind}/${ns}/${name}`));
    },
    list: async (kind, ns) => {
      await at(`list ${kind}`);
      return [...objects].filter(([k]) => k.startsWith(`${kind}/${ns}/`)).map(([, o]) => structuredClone(o));
    },
    create: async (kind, ns, body) => {
      const key = `${kind}/${ns}/${(body as Obj).metadata.name}`;
      if (objects.has(key)) return undefined;
      objects.set(key, structuredClone(body) as Obj);
      return body;
    },
    ready: async () => true,
  };
  /** Holds the next `call` until the returned function is called. */
  const pause = (call: string) => {
    let go = () => {};
    pauses.set(
      call,
      new Promise<void>((r) => {
        go = r;
      }),
    );
    return () => go();
  };
  return { kube, objects, pause };
};

const restoreLatest: Intent = { kind: 'Restore', namespace: 'd', cluster: 'c', source: { latest: true } };
const from = (webhookId: string) => ({ webhookId, peer: '127.0.0.1', receivedAt: new Date() });
const restores = (objects: Map<string, Obj>) => [...objects.keys()].filter((k) => k.startsWith('Restore/'));

describe('submit', () => {
  it('answers a retry with the Restore its first delivery made meanwhile, not RestoreInProgress', async () => {
    const api = apiServer();
    const deps = { kube: api.kube, mutex: localMutex() };
    // The retry has looked for its id (nothing yet) and is about to see whether a restore runs
    // when the first delivery, slow until now, creates the Restore.
    const go = api.pause('list Restore');
    const retry = submit(restoreLatest, from('msg_1'), deps);
    await new Promise((r) => setTimeout(r, 10));
    const first = await submit(restoreLatest, from('msg_1'), deps);
    expect(first).toMatchObject({ kind: 'Restore', replayed: false });
    go();
    // The retry's own pre-lock check now finds that Restore running.
    const answer = await retry;
    expect(answer).toEqual({ ...first, replayed: true });
    expect(restores(api.objects)).toHaveLength(1);
  });

  it('still refuses a second restore of the cluster under another id while one runs', async () => {
    const api = apiServer();
    const deps = { kube: api.kube, mutex: localMutex() };
    await submit(restoreLatest, from('msg_1'), deps);
    await expect(submit(restoreLatest, from('msg_2'), deps)).rejects.toMatchObject({
      code: 'RestoreInProgress',
    });
    // The same id with another request is refused as reused, even while its Restore runs.
    await expect(
      submit({ ...restoreLatest, source: { backup: { name: 'b1' } } }, from('msg_1'), deps),
    ).rejects.toMatchObject({ code: 'WebhookIdReused' });
    expect(restores(api.objects)).toHaveLength(1);
  });
});
