import type { CloudEvent } from 'cloudevents';
import { fakeHandlerContext } from '../../shared/runtime/fixture.ts';
import { handler } from './index.ts';

/** A run of etcd-reconcile for EtcdCluster prod/e (uid u-e) on a fake API server (unit tests only). */
export const runOnFakeApi = (api: Record<string, unknown>) => {
  const { ctx } = fakeHandlerContext(api, {
    function: 'etcd-reconcile',
    now: new Date('2026-11-28T08:00:00Z'),
    env: { TIDEWAY_IMAGE: 'tideway:x' },
  });
  const event = {
    id: 'e1',
    type: 'dev.tideway.resource.updated',
    source: '/watcher',
    kind: 'EtcdCluster',
    namespace: 'prod',
    name: 'e',
    uid: 'u-e',
  } as unknown as CloudEvent<unknown>;
  return () => handler(event, ctx);
};
