import { describe, expect, it } from 'vitest';
import { notFound } from '../../shared/runtime/fixture.ts';
import { restoredVolumeUid } from './from-backup.ts';

const core = (read: () => Promise<{ metadata?: { uid?: string } }>) => ({
  readNamespacedPersistentVolumeClaim: read as never,
});

describe('the volume a backup was restored into', () => {
  it("is its claim's uid, or '' when the claim is gone (a new one is restored again)", async () => {
    expect(
      await restoredVolumeUid(
        core(async () => ({ metadata: { uid: 'pvc-1' } })),
        'prod',
        'data-e-0',
      ),
    ).toBe('pvc-1');
    expect(
      await restoredVolumeUid(
        core(async () => {
          throw notFound();
        }),
        'prod',
        'data-e-0',
      ),
    ).toBe('');
  });

  it('is never recorded as none when the claim could not be read: the member would be restored again and again', async () => {
    const unavailable = Object.assign(new Error('etcdserver: request timed out'), { code: 503 });
    await expect(
      restoredVolumeUid(
        core(async () => {
          throw unavailable;
        }),
        'prod',
        'data-e-0',
      ),
    ).rejects.toBe(unavailable);
  });
});
