import type { CloudEvent } from 'cloudevents';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { MADE_BY } from './safety.ts';

/**
 * A restore function's context over an in-memory API (`api`: the client-node methods a test
 * serves), for unit tests: a fixed clock, no fencing, and the types of the events it publishes.
 */
export const fakeContext = (
  api: object,
  o: { attempt?: number; maxAttempts?: number; env?: Record<string, string> } = {},
) => {
  const published: string[] = [];
  const ctx = {
    kube: { makeApiClient: () => api },
    function: 'restore',
    attempt: o.attempt ?? 1,
    maxAttempts: o.maxAttempts ?? 1000,
    clock: () => new Date('2026-11-27T08:00:00Z'),
    fence: () => undefined,
    log: { info: () => {}, warn: () => {}, debug: () => {}, error: () => {} },
    metrics: { inc: () => {}, observe: () => {}, set: () => {} },
    publisher: {
      publish: async (e: CloudEvent<unknown>) => {
        published.push(e.type);
        return { duplicate: false, seq: 1 };
      },
    },
    signal: new AbortController().signal,
    env: o.env ?? {},
  } as unknown as HandlerContext;
  return { ctx, published };
};

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
