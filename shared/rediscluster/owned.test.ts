import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeClusterStore } from './fixture.ts';
import { applyOwned } from './owned.ts';

/** Discovery for the kinds a cluster owns: KubernetesObjectApi asks before it reads or applies. */
const DISCOVERY: Record<string, { groupVersion: string; resources: [string, string][] }> = {
  '/api/v1': {
    groupVersion: 'v1',
    resources: [
      ['configmaps', 'ConfigMap'],
      ['secrets', 'Secret'],
      ['services', 'Service'],
    ],
  },
  '/apis/apps/v1': { groupVersion: 'apps/v1', resources: [['statefulsets', 'StatefulSet']] },
  '/apis/policy/v1': {
    groupVersion: 'policy/v1',
    resources: [['poddisruptionbudgets', 'PodDisruptionBudget']],
  },
};
const KINDS = Object.fromEntries(Object.values(DISCOVERY).flatMap((d) => d.resources));

const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});

describe('applyOwned: what the API server refuses', () => {
  // A fake API server: nothing exists yet (every read is a 404), every apply is answered with the
  // object applied, except those of the kind `refuse` names, which are refused as invalid (422).
  let server: Server;
  let kube: KubeConfig;
  let refuse: { kind: string; message: string } | undefined;
  let applied: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const reply = (code: number, body: unknown) => {
        res.statusCode = code;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(body));
      };
      const discovery = DISCOVERY[path];
      if (req.method === 'GET' && discovery)
        return reply(200, {
          kind: 'APIResourceList',
          apiVersion: 'v1',
          groupVersion: discovery.groupVersion,
          resources: discovery.resources.map(([name, kind]) => ({ name, kind, namespaced: true, verbs: [] })),
        });
      const kind = KINDS[path.split('/').at(-2) ?? ''];
      if (req.method === 'GET') return reply(404, status(404, 'NotFound', `${path} not found`));
      if (req.method !== 'PATCH' || !kind) return reply(405, status(405, 'MethodNotAllowed', path));
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d.toString();
      });
      req.on('end', () => {
        if (kind === refuse?.kind) return reply(422, status(422, 'Invalid', refuse.message));
        applied.push(kind);
        reply(200, JSON.parse(body));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    kube = new KubeConfig();
    kube.loadFromClusterAndUser(
      {
        name: 'fake',
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
  beforeEach(() => {
    refuse = undefined;
    applied = [];
  });

  const run = () =>
    applyOwned({
      kube,
      rc: fakeClusterStore({}).load().rc,
      auth: { password: 'pw' },
      pods: [],
      stsReplicas: () => 3,
      fence: () => undefined,
    });

  it('applies every object, the StatefulSet last', async () => {
    const r = await run();
    expect(r).toHaveProperty('sts.kind', 'StatefulSet');
    expect(applied.at(-1)).toBe('StatefulSet');
    expect(new Set(applied)).toEqual(new Set(Object.values(KINDS)));
  });

  // No pod starts for a cluster whose Services or configuration cannot exist.
  it.each([
    [
      'Service',
      'Service "r" is invalid: spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive',
    ],
    ['ConfigMap', 'ConfigMap "r-config" is invalid: data: Too long: must have at most 1048576 bytes'],
  ])(
    'never applies the StatefulSet when the %s is refused, and reports what the API server said',
    async (kind, message) => {
      refuse = { kind, message };
      const r = await run();
      expect(applied).not.toContain('StatefulSet');
      expect(applied).not.toContain(kind);
      const name = kind === 'Service' ? 'r' : 'r-config';
      expect(r).toEqual({
        reason: 'Rejected',
        message: `the API server refused ${kind} ${name}: ${message}`,
      });
    },
  );
});
