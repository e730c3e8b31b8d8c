import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canConnect, freePort } from '../../infra/testbed/process/ports.ts';
import { until } from '../../infra/testbed/wait.ts';
import type { RedisCluster } from '../api/generated.ts';
import { connectRedis } from '../redis/client.ts';
import { parseInfo, parseReplication } from '../redis/info.ts';
import { assessHealth, masterBehind, outageWatch } from './health.ts';
import { planTopology } from './plan.ts';
import { fromInfo, type Instance } from './probe.ts';
import type { History } from './promotion.ts';

/**
 * What Redis 7 reports after a restart from an append-only file alone (appendonly yes, no
 * snapshot with replication info), with real servers: the replication id is new and the offset
 * is 1, exactly as for an empty server. Decisions that went by offset alone took such an instance
 * for no data at all.
 */
describe('a restart from an append-only file alone', () => {
  const servers = new Set<ChildProcess>();
  let dir = '';

  const start = async (name: string, args: string[]) => {
    const port = await freePort();
    const child = spawn(
      '/usr/bin/redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        join(dir, name),
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        '--repl-diskless-sync-delay',
        '0',
        ...args,
      ],
      { stdio: 'ignore' },
    );
    servers.add(child);
    await until(
      `redis ${name}`,
      async () => ((await canConnect('127.0.0.1', port)) ? true : undefined),
      10_000,
      50,
    );
    const client = await connectRedis({ host: '127.0.0.1', port, commandTimeoutMs: 5000 });
    return {
      port,
      client,
      /** SIGKILL: what a lost node does; appendfsync always has every write on disk already. */
      kill: async () => {
        client.close();
        child.kill('SIGKILL');
        await once(child, 'exit');
        servers.delete(child);
      },
    };
  };
  const instance = async (pod: string, ordinal: number, port: number): Promise<Instance> => {
    const c = await connectRedis({ host: '127.0.0.1', port });
    try {
      return {
        pod,
        ordinal,
        ip: '127.0.0.1',
        podReady: true,
        terminating: false,
        ...fromInfo(String(await c.command('INFO', 'all'))),
      };
    } finally {
      c.close();
    }
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-aof-'));
  });
  afterAll(async () => {
    for (const s of servers) s.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('is taken for the data it holds, not for an empty server: no empty master is chosen or reinstated', async () => {
    await mkdir(join(dir, 'r-0'));
    await mkdir(join(dir, 'r-1'));
    // A master and its replica, both with appendonly yes, 50 keys acknowledged by the replica.
    const a = await start('r-0', []);
    const b = await start('r-1', ['--replicaof', '127.0.0.1', String(a.port)]);
    await until(
      'replica in sync',
      async () => {
        const r = parseReplication(String(await b.client.command('INFO', 'replication')));
        // After a full sync a replica rewrites its append-only file and persists nothing until
        // that is done: wait, or a kill loses what it received.
        const p = parseInfo(String(await b.client.command('INFO', 'persistence'))).persistence ?? {};
        const aofReady = p.aof_rewrite_in_progress === '0' && p.aof_rewrite_scheduled === '0';
        return r.role === 'replica' && r.linkUp && aofReady ? true : undefined;
      },
      10_000,
      50,
    );
    for (let i = 0; i < 50; i++) await a.client.command('SET', `k${i}`, `v${i}`);
    expect(Number(await a.client.command('WAIT', 1, 5000))).toBe(1);
    const served = parseReplication(String(await a.client.command('INFO', 'replication')));
    const history: History = { id: served.replid, offset: served.offset };

    // Every instance goes down; the master's volume is lost. Both start again the way Tideway
    // starts every server: fenced, a replica of nothing.
    await a.kill();
    await b.kill();
    await rm(join(dir, 'r-0'), { recursive: true });
    await mkdir(join(dir, 'r-0'));
    const fenced = ['--replicaof', '127.0.0.1', '1'];
    const a2 = await start('r-0', fenced);
    const b2 = await start('r-1', fenced);
    const instances = [await instance('r-0', 0, a2.port), await instance('r-1', 1, b2.port)];
    const [empty, restored] = instances as [Instance, Instance];

    // The facts: offset 1 and a fresh id for both, whatever they hold.
    expect(empty.replication?.offset).toBe(1);
    expect(restored.replication?.offset).toBe(1);
    expect(restored.replication?.replid).not.toBe(history.id);
    expect(empty.keys).toBe(0);
    expect(restored.keys).toBe(50);

    // Recorded master empty: it is behind the instance with the data, and not reinstated.
    expect(masterBehind(instances, empty, history)?.pod).toBe('r-1');
    const plan = planTopology(instances, 'r-0', 2, history);
    expect(plan.commands).not.toContainEqual(
      expect.objectContaining({ pod: 'r-0', args: ['REPLICAOF', 'NO', 'ONE'] }),
    );
    expect(plan.blocked.join('; ')).toContain('r-0 came back with less data than r-1');

    // Health: the master is lost; r-1 is not promoted blindly (its place in the history cannot be
    // told), and the condition says what it holds.
    const rc = {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      metadata: { name: 'r', namespace: 'ns', uid: 'u' },
      spec: { version: '7.0', replicas: 2, failover: { enabled: true, after: '3s' } },
      status: { master: 'r-0', replication: history },
    } as unknown as RedisCluster;
    let t = 0;
    const watch = outageWatch(() => t);
    assessHealth(rc, instances, new Date(), watch);
    t = 60_000;
    const h = assessHealth(rc, instances, new Date(), watch);
    expect(h.failover).toBeUndefined();
    expect(h.healthy).toMatchObject({ status: 'False', reason: 'NoSafeCandidate' });
    expect(h.healthy.message).toContain('came back with less data than r-1 (no keys, 50 there)');
    expect(h.healthy.message).toContain('r-1 restarted without its replication history (50 keys');

    // No record (the cluster re-created on its old volumes): the first master is the one with the
    // data, not the lowest ordinal among equal offsets.
    expect(planTopology(instances, undefined, 2).master).toBe('r-1');

    await a2.kill();
    await b2.kill();
  });
});
