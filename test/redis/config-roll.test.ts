import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseReplication } from '../../shared/redis/info.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import {
  EVENTS_RECORDED,
  eventReasons,
  ipOf,
  missingKeys,
  redisAt,
  redisClusters,
  refusals,
  startRedisFunctions,
} from '../support/redis.ts';

/**
 * Issue 11, item 8: configuration rolls with the pods. A kubelet refreshes mounted ConfigMaps and
 * Secrets in running pods (the test bed's node agent does too), so what a pod reads at its next
 * start must not change before Tideway restarts it; and a password change must not make the
 * instances look unreachable.
 */
describe('redis configuration and password changes', () => {
  const b = bed();
  let ns = '';
  let workers: Worker[] = [];
  const rdc = redisClusters(b, () => ns);
  const podByName = async (name: string, pod: string) =>
    (await rdc.pods(name)).find((p) => p.metadata?.name === pod);
  const uids = async (name: string) =>
    Object.fromEntries((await rdc.pods(name)).map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']));
  const restarts = (p: Awaited<ReturnType<typeof podByName>>) =>
    p?.status?.containerStatuses?.find((c) => c.name === 'redis')?.restartCount ?? 0;
  const onMaster = async <T>(
    name: string,
    pw: string,
    fn: (c: Awaited<ReturnType<typeof redisAt>>) => Promise<T>,
  ) => {
    const master = (await rdc.get(name)).status?.master ?? '';
    const c = await redisAt(ipOf(await podByName(name, master)), pw);
    try {
      return await fn(c);
    } finally {
      c.close();
    }
  };
  /** Written, replicated to every replica and saved to disk everywhere (they survive a kill). */
  const writeAndSave = async (name: string, pw: string, keys: readonly string[]) => {
    await onMaster(name, pw, async (m) => {
      for (const k of keys) await m.command('SET', k, k);
      expect(await m.command('WAIT', '2', '5000')).toBe(2);
    });
    for (const p of await rdc.pods(name)) {
      const c = await redisAt(ipOf(p), pw);
      try {
        await c.command('SAVE');
      } finally {
        c.close();
      }
    }
  };

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'redis-roll');
  });

  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    expect(refusals(workers)).toEqual([]);
    workers = [];
  });

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it('a spec.config that crash-loops the server stops at the first replica; the master restarts with the configuration it had', async () => {
    workers = await startRedisFunctions(b, ns, `roll-${ns}`);
    const good = { replicas: 3, config: { 'maxmemory-policy': 'allkeys-lru' } };
    await rdc.apply('cfg', good);
    const before = await rdc.ready('cfg');
    const master = before.status?.master ?? '';
    const pw = await rdc.password('cfg');
    const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
    await writeAndSave('cfg', pw, keys);
    const uid0 = await uids('cfg');

    // A value redis-server refuses at start: every pod that reads it crash-loops.
    await rdc.apply('cfg', { ...good, config: { 'maxmemory-policy': 'no-such-policy' } });
    const first = ['cfg-0', 'cfg-1', 'cfg-2'].filter((p) => p !== master).at(-1) ?? '';
    await until(
      `${first} replaced and crash-looping`,
      async () => {
        const p = await podByName('cfg', first);
        return p && p.metadata?.uid !== uid0[first] && restarts(p) >= 1 ? p : undefined;
      },
      90_000,
      500,
    );

    // The master's server exits (saving first, so it comes back with every write and is not
    // behind its replicas) and its container restarts in the same pod: it must read the
    // configuration it started with, not the one waiting in the rollout.
    const masterRestarts = restarts(await podByName('cfg', master));
    await onMaster('cfg', pw, (c) => c.command('SHUTDOWN', 'SAVE')).catch(() => undefined);
    await until(
      `${master} restarted in place`,
      async () => {
        const p = await podByName('cfg', master);
        return p?.metadata?.uid === uid0[master] && restarts(p) > masterRestarts ? p : undefined;
      },
      60_000,
      500,
    );
    await until(
      `${master} serving as master again`,
      async () => {
        try {
          return await onMaster('cfg', pw, async (c) => {
            const role = parseReplication(String(await c.command('INFO', 'replication'))).role;
            return role === 'master' && (await c.command('SET', 'after-restart', '1')) === 'OK'
              ? true
              : undefined;
          });
        } catch {
          return undefined;
        }
      },
      60_000,
      500,
    );
    const rc = await rdc.get('cfg');
    expect(rc.status?.master, 'no failover: the master came back').toBe(master);
    expect(await eventReasons(b, ns, 'cfg')).not.toContain('Failover');
    await onMaster('cfg', pw, async (c) => {
      expect(await c.command('CONFIG', 'GET', 'maxmemory-policy')).toEqual([
        'maxmemory-policy',
        'allkeys-lru',
      ]);
    });
    expect(await missingKeys(ipOf(await podByName('cfg', master)), pw, keys)).toEqual([]);
    // The rollout waits at the first replica; nothing else was replaced.
    const during = await uids('cfg');
    for (const p of Object.keys(uid0).filter((p) => p !== first))
      expect(during[p], `${p} replaced`).toBe(uid0[p]);

    // Corrected: the broken replica is replaced, the others never restarted, and the ConfigMap
    // keeps only the configuration in use.
    await rdc.apply('cfg', good);
    await rdc.ready('cfg');
    const after = await uids('cfg');
    for (const p of Object.keys(uid0).filter((p) => p !== first))
      expect(after[p], `${p} replaced`).toBe(uid0[p]);
    await until(
      'one configuration left in the ConfigMap',
      async () => {
        const cm = await b.core.readNamespacedConfigMap({ namespace: ns, name: 'cfg-config' });
        const data = Object.keys(cm.data ?? {});
        return data.length === 1 ? data : undefined;
      },
      30_000,
      500,
    );
  });

  it('rolls a cluster with appendonly: each server restarts from its append-only file and follows again', async () => {
    workers = await startRedisFunctions(b, ns, `aof-${ns}`);
    const aof = { replicas: 3, config: { appendonly: 'yes' } };
    await rdc.apply('aof', aof);
    const before = await rdc.ready('aof');
    const pw = await rdc.password('aof');
    const keys = Array.from({ length: 50 }, (_, i) => `a${i}`);
    await onMaster('aof', pw, async (m) => {
      for (const k of keys) await m.command('SET', k, k);
      expect(await m.command('WAIT', '2', '5000')).toBe(2);
    });
    const uid0 = await uids('aof');
    // A change that restarts every server: each comes back from its AOF with a fresh replication
    // id at offset 1 and must be made to follow again, or the rollout never goes on.
    await rdc.apply('aof', { ...aof, config: { ...aof.config, 'maxmemory-policy': 'noeviction' } });
    await until(
      'every pod restarted and the cluster Ready',
      async () => {
        const now = await uids('aof');
        if (Object.keys(uid0).some((p) => now[p] === uid0[p])) return undefined;
        return (await rdc.ready('aof', 1000).catch(() => undefined)) ? true : undefined;
      },
      240_000,
      1000,
    );
    for (const p of await rdc.pods('aof'))
      expect(await missingKeys(ipOf(p), pw, keys), p.metadata?.name).toEqual([]);
    expect((await rdc.get('aof')).status?.master).not.toBe(undefined);
    expect(before.status?.master).toBeTruthy();
  });

  it('rotates a password without a restart or a failover: the new one works everywhere, the old one nowhere', async () => {
    workers = await startRedisFunctions(b, ns, `pw-${ns}`);
    const secret = (password: string) => ({
      metadata: { name: 'rot-password', namespace: ns },
      stringData: { password },
    });
    await b.core.createNamespacedSecret({ namespace: ns, body: secret('first-password') });
    await rdc.apply('rot', { replicas: 3, auth: { secretName: 'rot-password' }, failover: { after: '3s' } });
    const before = await rdc.ready('rot');
    const master = before.status?.master ?? '';
    const keys = Array.from({ length: 20 }, (_, i) => `r${i}`);
    await writeAndSave('rot', 'first-password', keys);
    const uid0 = await uids('rot');
    // Ready says nothing of health: a Healthy=False written while the replicas made their first
    // sync can stand until the next tick. Start from a cluster health has seen in sync, so that
    // any False below is the rotation's.
    await until(
      'Healthy=True before the rotation',
      async () =>
        (await rdc.get('rot')).status?.conditions?.find((c) => c.type === 'Healthy')?.status === 'True'
          ? true
          : undefined,
      60_000,
      500,
    );

    await b.core.replaceNamespacedSecret({
      namespace: ns,
      name: 'rot-password',
      body: secret('second-password'),
    });
    // Watch the whole change: the master stays, and health never finds the cluster unhealthy.
    const seen = new Set<string>();
    const masters = new Set<string>();
    const accepts = async (ip: string, password: string) => {
      try {
        (await redisAt(ip, password)).close();
        return true;
      } catch {
        return false;
      }
    };
    const rotated = until(
      'the new password alone accepted by every instance, replication in sync',
      async () => {
        const rc = await rdc.get('rot');
        masters.add(rc.status?.master ?? '');
        const healthy = rc.status?.conditions?.find((c) => c.type === 'Healthy');
        seen.add(`${healthy?.status}:${healthy?.reason}`);
        const pods = await rdc.pods('rot');
        for (const p of pods) {
          if (!(await accepts(ipOf(p), 'second-password')) || (await accepts(ipOf(p), 'first-password')))
            return undefined;
        }
        return onMaster('rot', 'second-password', async (c) =>
          (await c.command('WAIT', '2', '2000')) === 2 ? true : undefined,
        );
      },
      90_000,
      500,
    );
    await rotated.catch(async (error: unknown) => {
      // What the rotation is waiting for, for whoever reads a failure.
      const rc = await rdc.get('rot');
      const states = await Promise.all(
        (await rdc.pods('rot')).map(
          async (p) =>
            `${p.metadata?.name}: second ${await accepts(ipOf(p), 'second-password')}, first ${await accepts(ipOf(p), 'first-password')}`,
        ),
      );
      process.stdout.write(
        `[rotation] conditions ${JSON.stringify(rc.status?.conditions)}\n[rotation] ${states.join('; ')}\n${workers.map((w) => w.output()).join('\n')}\n`,
      );
      throw error;
    });
    expect([...masters]).toEqual([master]);
    expect([...seen].filter((s) => s.startsWith('False'))).toEqual([]);
    expect(await uids('rot')).toEqual(uid0);
    await expect.poll(() => eventReasons(b, ns, 'rot'), EVENTS_RECORDED).toContain('PasswordRotated');
    expect(await eventReasons(b, ns, 'rot')).not.toContain('Failover');

    // A replica that restarts now reads the new password from its refreshed file and syncs.
    const replica = ['rot-0', 'rot-1', 'rot-2'].find((p) => p !== master) ?? '';
    await b.core.deleteNamespacedPod({ namespace: ns, name: replica });
    await rdc.ready('rot');
    expect(await missingKeys(ipOf(await podByName('rot', replica)), 'second-password', keys)).toEqual([]);
    expect((await rdc.get('rot')).status?.master).toBe(master);
  });
});
