import { fakeHandlerContext } from '../../shared/runtime/fixture.ts';
import { MADE_BY } from './safety.ts';

/** The restore function's context over an in-memory API (`api`), at a fixed time: fakeHandlerContext. */
export const fakeContext = (
  api: object,
  o: { attempt?: number; maxAttempts?: number; env?: Record<string, string> } = {},
) => fakeHandlerContext(api, { ...o, function: 'restore', now: new Date('2026-11-27T08:00:00Z') });

/** Restore r1's safety backup in namespace prod (cluster main), made by the Restore with `uid`, still running. */
export const runningSafetyBackup = (uid: string) => ({
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'Backup',
  metadata: {
    name: 'r1-safety',
    namespace: 'prod',
    uid: 'u-s',
    annotations: { [MADE_BY.restore]: 'r1', [MADE_BY.uid]: uid },
  },
  spec: { cluster: { name: 'main' } },
  status: { phase: 'Running' },
});
