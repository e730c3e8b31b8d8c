import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackupSchedule } from '../../shared/api/generated.ts';
import { type Condition, findCondition } from '../../shared/kube/conditions.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import { refusals, startFunction } from '../support/redis.ts';

const SCHEDULE = TIDEWAY_KINDS.BackupSchedule;
/** Crons that never fire but that the API server's rule (NEVER_FIRING_CRON) lets through. */
const NEVER = { 'feb-30': '0 0 30 2-2 *', 'apr-31': '0 0 31 4-4 *' } as const;
const WINDOW_MS = 20_000;

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
/** CPU seconds (user + system, every thread) a process has used so far. */
const cpuSeconds = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (in parentheses, which may hold spaces): state is the 3rd, utime the 14th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
};
/** CPU seconds each worker uses over the next window. */
const cpuOver = async <K extends string>(workers: Record<K, Worker>, ms: number) => {
  const each = Object.entries<Worker>(workers);
  const start = each.map(([, w]) => cpuSeconds(w.pid));
  await sleep(ms);
  return Object.fromEntries(each.map(([k, w], i) => [k, cpuSeconds(w.pid) - (start[i] ?? 0)])) as Record<
    K,
    number
  >;
};

/**
 * Issue 11: a BackupSchedule whose cron never fires (30 February, 31 April) is reported as such,
 * and is no hot loop: the watcher (the clock) and the schedule function use no more CPU with it
 * than before it existed. The API server refuses the plain forms (`0 0 30 2 *`); these ranges
 * pass its rule, so the functions' own cron must cope with them.
 */
describe('a BackupSchedule that never fires', () => {
  const b = bed();
  let ns = '';
  const workers: Worker[] = [];
  const getSchedule = async (name: string) =>
    (await b.custom.getNamespacedCustomObject({ ...SCHEDULE, namespace: ns, name })) as BackupSchedule;
  const createSchedule = (name: string, schedule: string) =>
    b.custom.createNamespacedCustomObject({
      ...SCHEDULE,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'BackupSchedule',
        metadata: { name },
        spec: { cluster: { name: 'cache' }, schedule },
      },
    });
  const ready = async (name: string, reason: string) =>
    until(
      `${name}: Ready ${reason}`,
      async () => {
        const s = await getSchedule(name);
        const c = findCondition(s.status?.conditions as Condition[] | undefined, 'Ready');
        return c?.reason === reason ? { s, c } : undefined;
      },
      60_000,
      250,
    );

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'never-fires');
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    expect(refusals(workers)).toEqual([]);
  });

  it('is Ready=False NeverFires, and the watcher and schedule function stay idle with it', async () => {
    const watcher = await startFunction(b, ns, ns, 'watcher', {
      TIDEWAY_WATCHER_ID: `${ns}-${Date.now()}`,
      TIDEWAY_LOG_LEVEL: 'info', // it says when it finds a schedule that never fires
    });
    const schedule = await startFunction(b, ns, ns, 'schedule', { TIDEWAY_REPLICA: '0' });
    workers.push(watcher, schedule);
    // The cluster exists (an object only, nothing reconciles it): otherwise Ready says ClusterNotFound.
    await b.custom.createNamespacedCustomObject({
      ...TIDEWAY_KINDS.RedisCluster,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'RedisCluster',
        metadata: { name: 'cache' },
        spec: { version: '7.0', replicas: 1 },
      },
    });
    // A schedule that does fire: once it is Scheduled, the watcher has listed, leads and publishes.
    await createSchedule('daily', '0 3 * * *');
    await ready('daily', 'Scheduled');
    const before = await cpuOver({ watcher, schedule }, WINDOW_MS);

    // Admission lets both through...
    for (const [name, cron] of Object.entries(NEVER)) await createSchedule(name, cron);
    // ...the schedule function says they never fire, and records no next run.
    for (const [name, cron] of Object.entries(NEVER)) {
      const { s, c } = await ready(name, 'NeverFires');
      expect(c.status).toBe('False');
      expect(c.message).toBe(`schedule "${cron}" never fires in UTC; choose a date that exists`);
      expect(s.status?.nextScheduleTime).toBeUndefined();
      expect(s.status?.lastScheduleTime).toBeUndefined();
    }
    // The watcher has looked at both and found no fire time (not merely not yet got to them).
    await until(
      'the watcher found both never fire',
      async () => {
        const lines = watcher
          .output()
          .split('\n')
          .filter((l) => l.includes('"msg":"schedule never fires"'));
        return Object.values(NEVER).every((cron) => lines.some((l) => l.includes(`"schedule":"${cron}"`)))
          ? true
          : undefined;
      },
      30_000,
      250,
    );

    const after = await cpuOver({ watcher, schedule }, WINDOW_MS);
    process.stdout.write(
      `[never-fires] CPU seconds over ${WINDOW_MS / 1000} s: before ${JSON.stringify(before)}, with the schedules ${JSON.stringify(after)}\n`,
    );
    // Idle, each process uses ~0.1 s per window. Searching the 8 years of days (the bound) for
    // these two once a second instead of once uses ~1.3 s; the unbounded walk of the bug, all of it.
    for (const fn of ['watcher', 'schedule'] as const) {
      expect(after[fn], `${fn}: CPU with the never-firing schedules`).toBeLessThan(1);
      expect(after[fn] - before[fn], `${fn}: CPU beyond the window before them`).toBeLessThan(0.3);
    }
    expect(watcher.exitCode()).toBeNull();
    expect(schedule.exitCode()).toBeNull();
    // The clock still works for the schedule that does fire.
    expect((await getSchedule('daily')).status?.nextScheduleTime).toBeDefined();
  });
});
