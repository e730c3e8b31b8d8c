import { describe, expect, it } from 'vitest';
import type { Backup, RedisCluster, Restore } from '../../shared/api/generated.ts';
import { parseCommand } from '../args.ts';
import { CliError } from '../errors.ts';
import type { TidewayApi } from '../kube.ts';
import { restore } from './restore.ts';

const meta = (name: string, more: Record<string, unknown> = {}) => ({ name, namespace: 'demo', ...more });
const backup = (
  name: string,
  phase: string | undefined,
  o: { cluster?: string; safety?: boolean; kind?: 'EtcdCluster' } = {},
) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Backup',
    metadata: meta(name, o.safety ? { labels: { 'tideway.dev/safety-backup': 'true' } } : {}),
    spec: { cluster: { name: o.cluster ?? 'cache', ...(o.kind ? { kind: o.kind } : {}) } },
    ...(phase ? { status: { phase, completedAt: '2026-11-20T03:00:00Z' } } : {}),
  }) as Backup;
const restoreOf = (name: string, cluster: string, phase?: string) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Restore',
    metadata: meta(name),
    spec: { cluster: { name: cluster }, source: { latest: true } },
    ...(phase ? { status: { phase } } : {}),
  }) as Restore;

/** An API with these objects; records what is created; a created Restore reads as `ends`. */
const fakeApi = (
  o: { backups?: Backup[]; restores?: Restore[]; deleting?: boolean; ends?: Restore['status'] } = {},
) => {
  const created: { kind: string; object: Record<string, unknown> }[] = [];
  const api: TidewayApi = {
    defaultNamespace: 'demo',
    getCluster: async (ns, name) => {
      if (name !== 'cache') throw new CliError(`RedisCluster "${name}" in namespace "${ns}" not found`);
      return {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'RedisCluster',
        metadata: meta('cache', o.deleting ? { deletionTimestamp: '2026-11-20T00:00:00Z' } : {}),
        spec: { version: '7.0' },
      } as RedisCluster;
    },
    getBackup: async (ns, name) => {
      const b = o.backups?.find((x) => x.metadata.name === name);
      if (!b) throw new CliError(`Backup "${name}" in namespace "${ns}" not found`);
      return b;
    },
    getRestore: async (_, name) => ({ ...restoreOf(name, 'cache'), status: o.ends }),
    listBackups: async () => o.backups ?? [],
    listRestores: async () => o.restores ?? [],
    create: async (kind, _, object) => {
      created.push({ kind, object });
      return { name: 'r1' };
    },
  };
  return { api, created };
};

const run = async (argv: string[], api: TidewayApi) => {
  const c = parseCommand(argv);
  if (c.cmd !== 'restore') throw new Error('not a restore');
  let stdout = '';
  let stderr = '';
  const code = await restore(c, api, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
  });
  return { code, stdout, stderr };
};

const refused = async (argv: string[], f: ReturnType<typeof fakeApi>) => {
  const e = await run(argv, f.api).then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(CliError);
  expect((e as CliError).exitCode).toBe(1);
  expect(f.created).toEqual([]);
  return (e as Error).message;
};

describe('tideway restore', () => {
  it('refuses a source that is not a Completed Backup, creating nothing', async () => {
    const f = fakeApi({
      backups: [backup('bad', 'Failed'), backup('busy', 'Running'), backup('new', undefined)],
    });
    expect(await refused(['restore', 'cache', '--backup', 'bad'], f)).toBe(
      'Backup "bad" in namespace "demo" is Failed: only a Completed Backup can be restored',
    );
    expect(await refused(['restore', 'cache', '--backup', 'busy'], f)).toContain(
      'is Running: only a Completed Backup can be restored; restore it once it has completed',
    );
    expect(await refused(['restore', 'cache', '--backup', 'new'], f)).toContain('is Pending');
    // A Completed backup of the EtcdCluster namesake: never loaded into the RedisCluster.
    const etcd = fakeApi({ backups: [backup('cfg', 'Completed', { kind: 'EtcdCluster' })] });
    expect(await refused(['restore', 'cache', '--backup', 'cfg'], etcd)).toContain(
      'is a backup of EtcdCluster "cache": a restore loads RedisCluster backups only',
    );
    expect(await refused(['restore', 'cache', '--latest'], etcd)).toContain('has no Completed Backup');
    expect(await refused(['restore', 'cache', '--backup', 'ghost'], f)).toBe(
      'Backup "ghost" in namespace "demo" not found',
    );
    expect(await refused(['restore', 'ghost', '--latest'], f)).toBe(
      'RedisCluster "ghost" in namespace "demo" not found',
    );
  });

  it('--latest needs a Completed Backup of this cluster that is not a safety backup', async () => {
    const none = fakeApi({
      backups: [
        backup('other', 'Completed', { cluster: 'other' }),
        backup('r0-safety', 'Completed', { safety: true }),
        backup('failed', 'Failed'),
      ],
    });
    expect(await refused(['restore', 'cache', '--latest'], none)).toContain(
      'RedisCluster "cache" in namespace "demo" has no Completed Backup for --latest',
    );
    const one = fakeApi({ backups: [backup('nightly', 'Completed')], ends: { phase: 'Completed' } });
    expect((await run(['restore', 'cache', '--latest'], one.api)).code).toBe(0);
    expect(one.created).toEqual([
      {
        kind: 'Restore',
        object: {
          metadata: { generateName: 'cache-restore-' },
          spec: { cluster: { name: 'cache' }, source: { latest: true }, safetyBackup: true },
        },
      },
    ]);
  });

  it('one restore of a cluster at a time: an unfinished one of the same cluster refuses, others do not', async () => {
    const backups = [backup('nightly', 'Completed')];
    const busy = fakeApi({
      backups,
      restores: [restoreOf('r0', 'cache', 'Restoring'), restoreOf('rx', 'cache')],
    });
    expect(await refused(['restore', 'cache', '--backup', 'nightly'], busy)).toBe(
      'a Restore of RedisCluster "cache" in namespace "demo" is not finished: r0 (Restoring), rx (Pending); restore again once it has ended',
    );
    const free = fakeApi({
      backups,
      restores: [restoreOf('r0', 'cache', 'RolledBack'), restoreOf('ry', 'other', 'Restoring')],
      ends: { phase: 'Completed' },
    });
    expect((await run(['restore', 'cache', '--backup', 'nightly'], free.api)).code).toBe(0);
    expect(free.created).toHaveLength(1);
  });

  it('refuses a cluster being deleted', async () => {
    const f = fakeApi({ backups: [backup('nightly', 'Completed')], deleting: true });
    expect(await refused(['restore', 'cache', '--latest'], f)).toBe(
      'RedisCluster "cache" in namespace "demo" is being deleted',
    );
  });

  it('follows to the end: exit 0 only for Completed; -o json prints the status and draws nothing', async () => {
    const backups = [backup('nightly', 'Completed')];
    const rolled = fakeApi({
      backups,
      ends: { phase: 'RolledBack', safetyBackup: 'r1-safety', error: { reason: 'LoadFailed', message: 'x' } },
    });
    const r = await run(['restore', 'cache', '--backup', 'nightly'], rolled.api);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('Restore r1 RolledBack');
    expect(r.stderr).toContain('Restore demo/r1 created; following it');
    const done = fakeApi({ backups, ends: { phase: 'Completed', keys: 3, progress: { percent: 100 } } });
    const j = await run(['restore', 'cache', '--latest', '-o', 'json'], done.api);
    expect(j).toMatchObject({ code: 0, stderr: '' });
    // The keys --no-wait -o json prints, then the status.
    expect(JSON.parse(j.stdout)).toEqual({
      namespace: 'demo',
      name: 'r1',
      phase: 'Completed',
      keys: 3,
      progress: { percent: 100 },
    });
  });

  it('takes a Restore the runtime gave up on as the function does: no refusal, unless it left a load; following stops at it', async () => {
    const backups = [backup('nightly', 'Completed')];
    const given = (name: string, phase: string) => ({
      ...restoreOf(name, 'cache'),
      status: {
        phase,
        conditions: [
          {
            type: 'Completed',
            status: 'False',
            reason: 'RetriesExhausted',
            message: 'the handler did not finish in 1000 attempts',
            lastTransitionTime: '2026-11-20T03:00:00Z',
          },
        ],
      },
    });
    const loading = fakeApi({ backups, restores: [given('r0', 'Restoring') as Restore] });
    expect(await refused(['restore', 'cache', '--latest'], loading)).toBe(
      'a Restore of RedisCluster "cache" in namespace "demo" is not finished: r0 (Restoring, given up on: its next run or its deletion settles its load); restore again once it has ended',
    );
    const stuck = fakeApi({
      backups,
      restores: [given('r0', 'Verifying') as Restore],
      ends: given('r1', 'Verifying').status as Restore['status'],
    });
    const r = await run(['restore', 'cache', '--latest'], stuck.api);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      'Restore r1 Verifying, given up on: RetriesExhausted: the handler did not finish in 1000 attempts',
    );
  });
});
