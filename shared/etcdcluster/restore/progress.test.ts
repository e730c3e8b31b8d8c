import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { restoredOf, restoreFailureOf } from './progress.ts';

const pod = (...statuses: Partial<V1ContainerStatus>[]): V1Pod => ({
  status: {
    initContainerStatuses: statuses.map(
      (s) => ({ image: '', imageID: '', ready: false, restartCount: 0, ...s }) as V1ContainerStatus,
    ),
  },
});

describe('why a cluster’s first member does not start from its backup', () => {
  it('says what the fetch step said, while it restarts after failing', () => {
    const p = pod({
      name: 'fetch-backup',
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1, message: 'ChecksumMismatch: s3://bk/x has SHA-256 …' } },
    });
    expect(restoreFailureOf(p)).toEqual({
      step: 'fetch-backup',
      message: 'ChecksumMismatch: s3://bk/x has SHA-256 …',
    });
  });

  it('names a step that cannot start (a Secret that is not there)', () => {
    const p = pod({
      name: 'fetch-backup',
      state: { waiting: { reason: 'CreateContainerConfigError', message: 'secret "s3-creds" not found' } },
    });
    expect(restoreFailureOf(p)?.message).toBe('CreateContainerConfigError: secret "s3-creds" not found');
  });

  it('looks at etcdutl once the fetch succeeded; nothing while the steps run or after they succeeded', () => {
    const fetched = { name: 'fetch-backup', state: { terminated: { exitCode: 0 } } };
    expect(
      restoreFailureOf(
        pod(fetched, { name: 'restore-snapshot', state: { terminated: { exitCode: 2, reason: 'Error' } } }),
      ),
    ).toEqual({ step: 'restore-snapshot', message: 'exited with code 2 (Error)' });
    expect(restoreFailureOf(pod({ name: 'fetch-backup', state: { running: {} } }))).toBeUndefined();
    expect(
      restoreFailureOf(pod(fetched, { name: 'restore-snapshot', state: { terminated: { exitCode: 0 } } })),
    ).toBeUndefined();
    expect(restoreFailureOf(undefined)).toBeUndefined();
  });

  it('knows when the snapshot is in the volume: etcdutl finished, or refused a data dir restored before', () => {
    const fetched = { name: 'fetch-backup', state: { terminated: { exitCode: 0 } } };
    expect(
      restoredOf(pod(fetched, { name: 'restore-snapshot', state: { terminated: { exitCode: 0 } } })),
    ).toBe('restored');
    // etcdutl's own words (3.5.35 and 3.6.16) on a data dir that holds a member.
    const refused = {
      name: 'restore-snapshot',
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: {
        terminated: {
          exitCode: 1,
          message: 'Error: data-dir "/var/run/etcd/data" not empty or could not be read',
        },
      },
    };
    expect(restoredOf(pod(fetched, refused))).toBe('restoredBefore');
    // Its sandbox restarted after a success: the success is the last state, the refusal the current one.
    const again = {
      name: 'restore-snapshot',
      state: refused.lastState,
      lastState: { terminated: { exitCode: 0 } },
    };
    expect(restoredOf(pod(fetched, again))).toBe('restoredBefore');
    // Any other failure is not a restore.
    const other = {
      ...refused,
      lastState: { terminated: { exitCode: 1, message: 'Error: snapshot file has wrong hash' } },
    };
    expect(restoredOf(pod(fetched, other))).toBeUndefined();
    expect(restoredOf(pod(fetched, { name: 'restore-snapshot', state: { running: {} } }))).toBeUndefined();
    expect(restoredOf(undefined)).toBeUndefined();
  });
});
