import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverSideApply } from './apply.ts';
import { boundedKubeConfig, KUBE_CALL_TIMEOUT_MS, KubeTimeoutError } from './timeouts.ts';

/** Time until `p` settles, and how: what a handler waiting on a Kubernetes call would see. */
const settle = async (p: Promise<unknown>) => {
  const start = performance.now();
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { ms: performance.now() - start, error };
};

describe('boundedKubeConfig', () => {
  // An API server that takes every request and answers only one path in full: the rest hang.
  let server: Server;
  let kc: KubeConfig;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url?.startsWith('/api/v1/namespaces/ok/pods')) {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', metadata: {}, items: [] }));
      } else if (req.url?.startsWith('/api/v1/namespaces/half/pods')) {
        res.setHeader('content-type', 'application/json');
        res.write('{"apiVersion":"v1",'); // and the rest never comes
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      {
        name: 'stuck',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
      { name: 'u', token: 't' },
    );
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it('times every call out, generated clients and KubernetesObjectApi alike', async () => {
    const bounded = boundedKubeConfig(kc, { timeoutMs: 300 });
    const list = await settle(bounded.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'x' }));
    expect(list.error).toBeInstanceOf(KubeTimeoutError);
    expect((list.error as Error).message).toContain('GET /api/v1/namespaces/x/pods');
    expect(list.ms).toBeGreaterThanOrEqual(250);
    expect(list.ms).toBeLessThan(2000);
    // Headers came, the body stalls: still bounded.
    const half = await settle(bounded.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'half' }));
    expect(half.error).toBeInstanceOf(KubeTimeoutError);
    expect(half.ms).toBeLessThan(2000);
    // apply.ts: KubernetesObjectApi (its discovery call hangs first).
    const apply = await settle(
      serverSideApply(bounded, 'test')({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }),
    );
    expect(apply.error).toBeInstanceOf(KubeTimeoutError);
    expect(apply.ms).toBeLessThan(2000);
  });

  it('aborts a call at once, with the reason, when the signal aborts', async () => {
    const stop = new AbortController();
    const bounded = boundedKubeConfig(kc, { signal: stop.signal });
    const reason = new Error('handler cancelled');
    setTimeout(() => stop.abort(reason), 100);
    const r = await settle(bounded.makeApiClient(CoreV1Api).readNamespace({ name: 'x' }));
    expect(r.error).toBe(reason);
    expect(r.ms).toBeLessThan(1000);
    // Already aborted: no call goes out at all.
    const again = await settle(bounded.makeApiClient(CoreV1Api).readNamespace({ name: 'x' }));
    expect(again.error).toBe(reason);
  });

  it('defaults to one timeout for all, and leaves calls that are answered alone', async () => {
    expect(KUBE_CALL_TIMEOUT_MS).toBe(10_000);
    const bounded = boundedKubeConfig(kc, { signal: new AbortController().signal });
    const pods = await bounded.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'ok' });
    expect(pods.items).toEqual([]);
    // The original is untouched: its calls carry no deadline of ours.
    expect(Object.hasOwn(kc, 'applySecurityAuthentication')).toBe(false);
  });
});
