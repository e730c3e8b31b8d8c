import { describe, expect, it } from 'vitest';
import { memoryCustomObjects } from './fixture.ts';

// The in-memory store must refuse what the API server refuses, or tests of conflict handling pass
// against it and fail on a cluster.
describe('memoryCustomObjects', () => {
  const setup = () => {
    const m = memoryCustomObjects();
    m.put('backups', {
      metadata: { name: 'b', uid: 'u1', resourceVersion: '5', finalizers: ['tideway.dev/x'] },
    } as never);
    return m;
  };
  const read = (m: ReturnType<typeof setup>) =>
    m.api.getNamespacedCustomObject({ plural: 'backups', name: 'b' }) as Promise<{
      metadata: { resourceVersion: string; annotations?: Record<string, string> };
      status?: unknown;
    }>;

  it('refuses a patch or status write made on a stale read, or on another object of the name (409)', async () => {
    const m = setup();
    const first = await read(m);
    await m.api.patchNamespacedCustomObject({
      plural: 'backups',
      name: 'b',
      body: { metadata: { annotations: { a: '1' } } },
    });
    for (const body of [
      { metadata: { resourceVersion: first.metadata.resourceVersion } },
      { metadata: { uid: 'u2' } },
    ]) {
      await expect(
        m.api.patchNamespacedCustomObject({ plural: 'backups', name: 'b', body }),
      ).rejects.toMatchObject({
        code: 409,
      });
      await expect(
        m.api.replaceNamespacedCustomObjectStatus({
          plural: 'backups',
          name: 'b',
          body: { ...body, status: {} },
        }),
      ).rejects.toMatchObject({ code: 409 });
    }
  });

  it('writes only the status on a status write, and a new resourceVersion on every write', async () => {
    const m = setup();
    const before = await read(m);
    await m.api.replaceNamespacedCustomObjectStatus({
      plural: 'backups',
      name: 'b',
      body: { metadata: { annotations: { lost: 'yes' } }, status: { phase: 'Completed' } },
    });
    const after = await read(m);
    expect(after.status).toEqual({ phase: 'Completed' });
    expect(after.metadata.annotations).toBeUndefined();
    expect(after.metadata.resourceVersion).not.toBe(before.metadata.resourceVersion);
  });

  it('lets an object being deleted go with its last finalizer', async () => {
    const m = setup();
    await m.api.patchNamespacedCustomObject({
      plural: 'backups',
      name: 'b',
      body: { metadata: { deletionTimestamp: '2026-11-28T00:00:00Z' } },
    });
    expect(m.get('backups', 'b')).toBeDefined();
    await m.api.patchNamespacedCustomObject({
      plural: 'backups',
      name: 'b',
      body: { metadata: { finalizers: [] } },
    });
    expect(m.get('backups', 'b')).toBeUndefined();
  });
});
