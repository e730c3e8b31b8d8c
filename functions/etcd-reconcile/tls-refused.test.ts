import { describe, expect, it } from 'vitest';
import { FINALIZER } from '../../shared/engines/finalizer.ts';
import { notFound } from '../../shared/runtime/fixture.ts';
import { runOnFakeApi } from './fixture.ts';

// biome-ignore lint/suspicious/noExplicitAny: API objects of several kinds, as the fake API serves them
type Obj = Record<string, any>;

const condition = (status: Obj, type: string) => (status.conditions as Obj[]).find((c) => c.type === type);

/** EtcdCluster e with generated TLS, formed and last seen Ready, whose CA Secret is gone now. */
const world = () => {
  const seen = { lastTransitionTime: '2026-11-28T07:00:00Z', observedGeneration: 1 };
  let cluster: Obj = {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'EtcdCluster',
    metadata: {
      name: 'e',
      namespace: 'prod',
      uid: 'u-e',
      generation: 1,
      resourceVersion: '1',
      finalizers: [FINALIZER],
    },
    spec: { version: '3.6', size: 3, tls: {} },
    status: {
      phase: 'Ready',
      clusterID: 'c0ffee',
      tls: { trustedCAs: { peer: 'p', client: 'c' } },
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Ready', message: '3 members serve', ...seen },
        {
          type: 'Healthy',
          status: 'True',
          reason: 'Healthy',
          message: '3 members answer, one leader',
          ...seen,
        },
      ],
    },
  };
  const created: string[] = [];
  const api = {
    setDefaultNamespace: () => {},
    read: async () => {
      throw notFound();
    },
    patch: async (x: unknown) => x,
    getNamespacedCustomObject: async () => structuredClone(cluster),
    replaceNamespacedCustomObjectStatus: async (a: { body: Obj }) => {
      cluster = structuredClone(a.body);
      return a.body;
    },
    readNamespacedSecret: async () => {
      throw notFound();
    },
    createNamespacedSecret: async (a: { body: Obj }) => {
      created.push(a.body.metadata.name);
      return a.body;
    },
    listNamespacedPod: async () => ({ items: [] }),
    createNamespacedEvent: async () => ({}),
  };
  return { run: runOnFakeApi(api), status: () => cluster.status as Obj, created };
};

describe('etcd-reconcile when the TLS material is refused', () => {
  it('after formation: issues nothing, and Ready and Healthy say it no longer sees the members instead of what it saw last', async () => {
    const w = world();
    await w.run();
    expect(w.created).toEqual([]); // no CA made after the members started: they would not trust it
    const s = w.status();
    expect(condition(s, 'Reconciled')).toMatchObject({ status: 'False', reason: 'TLSCASecretLost' });
    for (const type of ['Ready', 'Healthy']) {
      expect(condition(s, type)).toMatchObject({ status: 'Unknown', reason: 'TLSCASecretLost' });
      expect(condition(s, type)?.message).toMatch(
        /^Tideway does not check or repair the members until this is fixed: Secret e-etcd-ca is gone/,
      );
    }
  });
});
