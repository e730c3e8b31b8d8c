import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { fakeContext } from './fixture.ts';
import { settleLoad } from './gone.ts';

// A load left by a Restore no run goes on with: its target still follows the feed, which is
// gone. It is made a master again only while it is the cluster's recorded master. The target is
// a RESP server on a loopback address of its own (port 6379) that answers as that replica.
const HOST = '127.0.0.78';
const FEED = '10.0.0.1';
const INFO = [
  '# Server',
  'run_id:r0',
  '# Persistence',
  'loading:0',
  '# Replication',
  'role:slave',
  `master_host:${FEED}`,
  'master_port:40000',
  'master_link_status:down',
  'master_link_down_since_seconds:30',
  'master_sync_in_progress:0',
  'slave_repl_offset:100',
  `master_replid:${'b'.repeat(40)}`,
  `master_replid2:${'0'.repeat(40)}`,
  '# Keyspace',
  'db0:keys=5,expires=0,avg_ttl=0',
].join('\r\n');

describe('settleLoad', () => {
  const received: string[] = [];
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    sockets.push(s);
    s.on('data', (d) => {
      for (const command of d
        .toString()
        .split(/\*\d+\r\n/)
        .filter(Boolean)) {
        const words = command.split('\r\n').filter((w) => w && !w.startsWith('$'));
        received.push(words.join(' '));
        s.write(words[0] === 'INFO' ? `$${Buffer.byteLength(INFO)}\r\n${INFO}\r\n` : '+OK\r\n');
      }
    });
  });
  beforeAll(async () => {
    server.listen(6379, HOST);
    await once(server, 'listening');
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  const settle = (master: string) => {
    received.length = 0;
    const api = {
      readNamespacedSecret: async (a: { name: string }) => ({
        metadata: {
          name: a.name,
          namespace: 'prod',
          ownerReferences: [
            {
              apiVersion: 'tideway.dev/v1alpha1',
              kind: 'RedisCluster',
              name: 'main',
              uid: 'u-rc',
              controller: true,
            },
          ],
        },
        data: { password: Buffer.from('pw').toString('base64') },
      }),
      listNamespacedPod: async () => ({
        items: [
          {
            metadata: {
              name: 'main-0',
              ownerReferences: [
                { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'main', uid: 's', controller: true },
              ],
            },
            status: { podIP: HOST, conditions: [{ type: 'Ready', status: 'True' }] },
          },
        ],
      }),
    };
    const rc = {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      metadata: { name: 'main', namespace: 'prod', uid: 'u-rc' },
      spec: {},
      status: { master },
    } as unknown as RedisCluster;
    const load = {
      of: 'restore',
      attempt: 1,
      replid: 'c'.repeat(40),
      pod: 'main-0',
      feedHost: FEED,
      delivered: false,
      before: { runId: 'r0', replid: 'b'.repeat(40), offset: 100, keys: 5 },
      rdbSize: 0,
      startedAt: '2026-11-27T07:00:00Z',
    } as const;
    return settleLoad(fakeContext(api).ctx, rc, load as never);
  };

  it('makes the target a master again while it is the recorded master', async () => {
    await settle('main-0');
    expect(received).toContain('REPLICAOF NO ONE');
  });

  it('never once a failover replaced it: it would be a second master', async () => {
    await settle('main-1');
    expect(received.filter((c) => c.startsWith('REPLICAOF'))).toEqual([]);
  });
});
