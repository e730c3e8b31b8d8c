import { AuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupName } from '../../functions/schedule/names.ts';
import { tickEvent } from '../../functions/watcher/events.ts';
import { SYSTEM_NAMESPACE } from '../../infra/install.ts';
import type { Backup, BackupSchedule } from '../../shared/api/generated.ts';
import { connectBus } from '../../shared/bus/connect.ts';
import { jetStreamPublisher } from '../../shared/bus/publisher.ts';
import { EventType } from '../../shared/events/types.ts';
import { type Condition, findCondition } from '../../shared/kube/conditions.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { consumerBacklog } from '../../shared/runtime/durables.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import { eventReasons, refusals, startFunction } from '../support/redis.ts';

const SCHEDULE = TIDEWAY_KINDS.BackupSchedule;
const BACKUP = TIDEWAY_KINDS.Backup;
const MINUTE = 60_000;
const SCHEDULED = 'tideway.dev/scheduled-time';

/**
 * BackupSchedules end to end: the product's watcher (the clock) and schedule function, each as
 * its own ServiceAccount, per namespace, on the test bed's API server and NATS. No backup function
 * runs here: the test plays it where a run's Backup must finish, by writing the Backup's status
 * through the status subresource. Crons fire per minute, so the tests run side by side.
 */
describe.concurrent('backup schedules', () => {
  const b = bed();
  const workers: Worker[] = [];
  const namespaces: string[] = [];

  beforeAll(async () => {
    await installCrds(b.info);
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(namespaces.map((name) => b.core.deleteNamespace({ name }).catch(() => undefined)));
    // Least privilege is enough: no function was refused anything along the way.
    expect(refusals(workers)).toEqual([]);
  });

  /** A namespace with its own watcher and schedule function, which can be stopped and started. */
  const operator = async (prefix: string, scheduleReplicas = 1, withWatcher = true) => {
    const ns = await createNamespace(b.core, prefix);
    namespaces.push(ns);
    const live: Record<'watcher' | 'schedule', Worker[]> = { watcher: [], schedule: [] };
    const start = async (fn: 'watcher' | 'schedule', replicas = 1) => {
      for (let r = 0; r < replicas; r++) {
        const env: Record<string, string> =
          fn === 'watcher' ? { TIDEWAY_WATCHER_ID: `${ns}-${Date.now()}` } : { TIDEWAY_REPLICA: String(r) };
        const w = await startFunction(b, ns, ns, fn, env);
        workers.push(w);
        live[fn].push(w);
      }
    };
    const stop = async (fn: 'watcher' | 'schedule') => {
      await Promise.all(live[fn].splice(0).map((w) => w.stop()));
    };
    if (withWatcher) await start('watcher');
    await start('schedule', scheduleReplicas);
    return { ns, start, stop, ...objects(ns) };
  };

  /** What a user and (played by the test) the backup function do in one namespace. */
  const objects = (ns: string) => {
    const getSchedule = async (name: string) =>
      (await b.custom.getNamespacedCustomObject({ ...SCHEDULE, namespace: ns, name })) as BackupSchedule;
    /** Backups not on their way out, of one schedule (by label) or all. */
    const backups = async (schedule?: string) =>
      (
        (await b.custom.listNamespacedCustomObject({
          ...BACKUP,
          namespace: ns,
          ...(schedule ? { labelSelector: `tideway.dev/schedule=${schedule}` } : {}),
        })) as { items: Backup[] }
      ).items.filter((x) => !x.metadata.deletionTimestamp);
    const setStatus = (name: string, status: Record<string, unknown>) =>
      b.kubectl(
        'patch',
        'backups.tideway.dev',
        name,
        '-n',
        ns,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status }),
      );
    return {
      getSchedule,
      backups,
      setStatus,
      /** An object only: nothing reconciles it here, a schedule only needs it to exist. */
      createCluster: (name: string) =>
        b.custom.createNamespacedCustomObject({
          ...TIDEWAY_KINDS.RedisCluster,
          namespace: ns,
          body: {
            apiVersion: 'tideway.dev/v1alpha1',
            kind: 'RedisCluster',
            metadata: { name },
            spec: { version: '7.0', replicas: 1 },
          },
        }),
      createSchedule: async (name: string, spec: Record<string, unknown>) =>
        (await b.custom.createNamespacedCustomObject({
          ...SCHEDULE,
          namespace: ns,
          body: { apiVersion: 'tideway.dev/v1alpha1', kind: 'BackupSchedule', metadata: { name }, spec },
        })) as BackupSchedule,
      patchSchedule: (name: string, spec: Record<string, unknown>) =>
        b.kubectl(
          'patch',
          'backupschedules.tideway.dev',
          name,
          '-n',
          ns,
          '--type=merge',
          '-p',
          JSON.stringify({ spec }),
        ),
      /** As the backup function would: each unfinished Backup of `schedule` completes now. */
      completeAll: async (schedule?: string) => {
        for (const x of await backups(schedule))
          if (!x.status?.phase)
            await setStatus(x.metadata.name, {
              phase: 'Completed',
              startedAt: x.metadata.annotations?.[SCHEDULED],
              completedAt: new Date().toISOString(),
            });
      },
      condition: (s: BackupSchedule, type: string) =>
        findCondition(s.status?.conditions as Condition[] | undefined, type),
      reasons: (name: string) => eventReasons(b, ns, name),
    };
  };

  const scheduledOf = (x: Backup) => new Date(x.metadata.annotations?.[SCHEDULED] ?? 0);
  const rfc = (t: Date) => t.toISOString().replace('.000Z', 'Z');
  /** Until the clock reads at most `second` seconds past a minute: runs of schedules made now line up. */
  const earlyInMinute = (second: number) =>
    until(
      'early in a minute',
      async () => (new Date().getUTCSeconds() <= second ? true : undefined),
      MINUTE,
      250,
    );

  it(
    'a per-minute cron makes one Backup per run, on time; retention prunes as runs finish; suspend stops it',
    async () => {
      const o = await operator('sched', 2);
      await o.createCluster('cache');
      const s = await o.createSchedule('every-minute', {
        cluster: { name: 'cache' },
        schedule: '* * * * *',
        retention: { keepLast: 1 },
        template: { source: 'master', deletionPolicy: 'Retain' },
      });

      // The test plays the backup function: the first run's Backup finishes at once.
      const [firstRun] = await until(
        'the first run',
        async () => {
          const xs = await o.backups('every-minute');
          return xs.length > 0 ? xs : undefined;
        },
        2 * MINUTE,
        500,
      );
      await o.completeAll('every-minute');
      // The second run's Backup is still unfinished: retention counts only Completed ones, so
      // keepLast 1 keeps the first (the newest Completed) for now.
      const secondRun = rfc(new Date(scheduledOf(firstRun!).getTime() + MINUTE));
      const pending = await until(
        'the second run recorded, its Backup unfinished',
        async () => {
          const sc = await o.getSchedule('every-minute');
          const name = backupName('every-minute', new Date(secondRun));
          return sc.status?.lastScheduleTime === secondRun && sc.status.active?.includes(name)
            ? name
            : undefined;
        },
        1.5 * MINUTE,
        500,
      );
      const seen = await o.backups('every-minute');
      expect(seen).toHaveLength(2);
      expect(seen.find((x) => x.metadata.name === pending)?.status?.phase).toBeUndefined();
      await o.completeAll('every-minute');
      const runs = [...seen].sort((x, y) => scheduledOf(x).getTime() - scheduledOf(y).getTime());
      runs.forEach((x, i) => {
        const at = scheduledOf(x);
        expect(at.getTime() % MINUTE).toBe(0);
        if (i > 0) expect(at.getTime() - scheduledOf(runs[i - 1]!).getTime()).toBe(MINUTE); // none skipped
        // On time: made within seconds of the minute it is for.
        const lateMs = new Date(x.metadata.creationTimestamp ?? 0).getTime() - at.getTime();
        expect(lateMs).toBeGreaterThanOrEqual(0);
        expect(lateMs).toBeLessThan(10_000);
        expect(x.metadata.name).toBe(backupName('every-minute', at));
        expect(x.metadata.labels).toMatchObject({
          'tideway.dev/schedule': 'every-minute',
          'tideway.dev/cluster': 'cache',
        });
        // The schedule is named, not an owner: deleting the schedule must not delete its Backups.
        expect(x.metadata.annotations).toMatchObject({
          'tideway.dev/schedule-name': 'every-minute',
          'tideway.dev/schedule-uid': s.metadata.uid,
        });
        expect((x.metadata as { ownerReferences?: unknown }).ownerReferences).toBeUndefined();
        // The cluster's kind is named (RedisCluster, the default), as the schedule names it.
        expect(x.spec).toEqual({
          cluster: { name: 'cache', kind: 'RedisCluster' },
          source: 'master',
          deletionPolicy: 'Retain',
        });
      });

      // keepLast 1: the first run goes once the second has finished.
      const [first, second] = runs.map((x) => x.metadata.name);
      const status = await until(
        'the first run pruned, the status current',
        async () => {
          const names = (await o.backups('every-minute')).map((x) => x.metadata.name);
          const sc = await o.getSchedule('every-minute');
          return !names.includes(first!) && sc.status?.lastSuccessfulBackup !== first ? sc : undefined;
        },
        MINUTE,
        500,
      );
      expect((await o.backups('every-minute')).map((x) => x.metadata.name)).toEqual(
        expect.arrayContaining([second]),
      );
      const last = new Date(status.status?.lastScheduleTime ?? 0);
      expect(status.status).toMatchObject({
        lastSuccessfulBackup: second,
        nextScheduleTime: rfc(new Date(last.getTime() + MINUTE)),
        observedGeneration: status.metadata.generation,
      });
      expect(status.status?.missedRuns ?? 0).toBe(0);
      expect(o.condition(status, 'Ready')).toMatchObject({ status: 'True', reason: 'Scheduled' });
      expect(o.condition(status, 'LastRun')).toMatchObject({ status: 'True', reason: 'BackupCreated' });
      expect(o.condition(status, 'Retention')).toMatchObject({ status: 'True', reason: 'Applied' });
      expect(await o.reasons('every-minute')).toEqual(expect.arrayContaining(['BackupCreated', 'Pruned']));

      // Suspended: no run for a whole minute boundary and more; the status says why.
      await o.patchSchedule('every-minute', { suspend: true });
      const suspended = await until(
        'Ready=False Suspended',
        async () => {
          const sc = await o.getSchedule('every-minute');
          return o.condition(sc, 'Ready')?.reason === 'Suspended' ? sc : undefined;
        },
        MINUTE,
      );
      expect(suspended.status?.nextScheduleTime).toBeUndefined();
      const before = (await o.backups('every-minute')).map((x) => x.metadata.name).sort();
      const boundary = Math.ceil(Date.now() / MINUTE) * MINUTE;
      await until(
        'past a minute boundary',
        async () => (Date.now() > boundary + 15_000 ? true : undefined),
        2 * MINUTE,
        500,
      );
      expect((await o.backups('every-minute')).map((x) => x.metadata.name).sort()).toEqual(before);
      expect((await o.getSchedule('every-minute')).status?.lastScheduleTime).toBe(
        suspended.status?.lastScheduleTime,
      );

      // Resumed: the next run is made, and the suspended minutes are not made up.
      const resumedAt = Date.now();
      await o.patchSchedule('every-minute', { suspend: false });
      const resumed = await until(
        'a run after resuming',
        async () => {
          await o.completeAll('every-minute');
          return (await o.backups('every-minute')).find((x) => !before.includes(x.metadata.name));
        },
        1.5 * MINUTE,
        500,
      );
      expect(scheduledOf(resumed).getTime()).toBeGreaterThan(resumedAt);
      expect((await o.getSchedule('every-minute')).status?.missedRuns ?? 0).toBe(0);

      // Deleted: its Backups stay. A ConfigMap owned by the schedule shows when the garbage
      // collector has dealt with the deletion (it would have taken the Backups by then).
      // Suspended first, and retention done (keepLast 1), so nothing else changes the Backups.
      await o.patchSchedule('every-minute', { suspend: true });
      await o.completeAll('every-minute');
      const kept = await until(
        'retention done',
        async () => {
          const names = (await o.backups('every-minute')).map((x) => x.metadata.name);
          return names.length === 1 ? names : undefined;
        },
        MINUTE,
        500,
      );
      await b.core.createNamespacedConfigMap({
        namespace: o.ns,
        body: {
          metadata: {
            name: 'owned-by-the-schedule',
            ownerReferences: [
              {
                apiVersion: 'tideway.dev/v1alpha1',
                kind: 'BackupSchedule',
                name: 'every-minute',
                uid: s.metadata.uid ?? '',
              },
            ],
          },
        },
      });
      await b.custom.deleteNamespacedCustomObject({ ...SCHEDULE, namespace: o.ns, name: 'every-minute' });
      await until(
        'the garbage collector took what the schedule owned',
        async () => {
          const left = await b.core.listNamespacedConfigMap({ namespace: o.ns });
          return left.items.some((c) => c.metadata?.name === 'owned-by-the-schedule') ? undefined : true;
        },
        MINUTE,
        500,
      );
      expect((await o.backups('every-minute')).map((x) => x.metadata.name).sort()).toEqual(kept);
    },
    7 * MINUTE,
  );

  it(
    'concurrencyPolicy: Forbid skips a run while the last Backup is unfinished; Replace replaces it',
    async () => {
      const o = await operator('sched-conc');
      await o.createCluster('cache');
      await earlyInMinute(45); // both schedules' first runs fall in the same minute
      for (const policy of ['Forbid', 'Replace'])
        await o.createSchedule(policy.toLowerCase(), {
          cluster: { name: 'cache' },
          schedule: '* * * * *',
          concurrencyPolicy: policy,
        });
      // Nothing finishes these Backups: the first run's stays Pending.
      const firstRun = await until(
        'the first runs',
        async () => {
          const [f, r] = await Promise.all([o.getSchedule('forbid'), o.getSchedule('replace')]);
          const t = f.status?.lastScheduleTime;
          return t && t === r.status?.lastScheduleTime ? new Date(t) : undefined;
        },
        1.5 * MINUTE,
        500,
      );
      const secondRun = new Date(firstRun.getTime() + MINUTE);
      // Recorded, and the status brought up to date after it (active is written after the run).
      const [forbid, replace] = await until(
        'the second runs',
        async () => {
          const [f, r] = await Promise.all([o.getSchedule('forbid'), o.getSchedule('replace')]);
          const recorded = [f, r].every((x) => x.status?.lastScheduleTime === rfc(secondRun));
          return recorded && r.status?.active?.[0] === backupName('replace', secondRun) ? [f, r] : undefined;
        },
        1.5 * MINUTE,
        500,
      );

      expect((await o.backups('forbid')).map((x) => x.metadata.name)).toEqual([
        backupName('forbid', firstRun),
      ]);
      expect(forbid.status?.active).toEqual([backupName('forbid', firstRun)]);
      expect(o.condition(forbid, 'LastRun')).toMatchObject({ status: 'False', reason: 'SkippedConcurrent' });
      expect(forbid.status?.missedRuns ?? 0).toBe(0);

      expect((await o.backups('replace')).map((x) => x.metadata.name)).toEqual([
        backupName('replace', secondRun),
      ]);
      expect(replace.status?.active).toEqual([backupName('replace', secondRun)]);
      expect(o.condition(replace, 'LastRun')).toMatchObject({ status: 'True', reason: 'Replaced' });
      expect(await o.reasons('forbid')).toContain('SkippedConcurrent');
      expect(await o.reasons('replace')).toContain('Replaced');
    },
    5 * MINUTE,
  );

  it(
    'runs missed while the operator was down: the latest is made once within startingDeadlineSeconds, older ones are counted',
    async () => {
      // In one namespace the whole operator stops (watcher and function: one tick for the latest
      // fire comes later, carrying how many came before it); in the other only the function stops
      // (every fire's tick waits in the stream). Each has a schedule with a long deadline and one
      // with a short one.
      const [whole, fnOnly] = await Promise.all([operator('down-all'), operator('down-fn')]);
      const all = [whole, fnOnly];
      await Promise.all(all.map((o) => o.createCluster('cache')));
      await earlyInMinute(40);
      for (const o of all) {
        await o.createSchedule('patient', {
          cluster: { name: 'cache' },
          schedule: '* * * * *',
          startingDeadlineSeconds: 300,
        });
        await o.createSchedule('strict', {
          cluster: { name: 'cache' },
          schedule: '* * * * *',
          startingDeadlineSeconds: 15,
        });
      }
      const first = await until(
        'the first run of each schedule',
        async () => {
          await Promise.all(all.map((o) => o.completeAll()));
          const times = await Promise.all(
            all.flatMap((o) =>
              ['patient', 'strict'].map(async (n) => (await o.getSchedule(n)).status?.lastScheduleTime),
            ),
          );
          const finished = await Promise.all(
            all.map(async (o) => (await o.backups()).every((x) => x.status?.phase)),
          );
          return times.every((t) => t && t === times[0]) && finished.every(Boolean)
            ? new Date(times[0]!)
            : undefined;
        },
        1.5 * MINUTE,
        500,
      );
      await Promise.all([whole.stop('watcher'), whole.stop('schedule'), fnOnly.stop('schedule')]);

      // Down across two runs; back 30 s after the second, within 300 s and past 15 s of it.
      const [missed, latest] = [1, 2].map((n) => new Date(first.getTime() + n * MINUTE));
      const back = latest!.getTime() + 30_000;
      await until(
        '30 s past the second missed run',
        async () => (Date.now() >= back ? true : undefined),
        3 * MINUTE,
        500,
      );
      await Promise.all([whole.start('watcher'), whole.start('schedule'), fnOnly.start('schedule')]);

      for (const o of all) {
        const [patient, strict] = await until(
          `${o.ns}: the latest run handled`,
          async () => {
            const both = await Promise.all([o.getSchedule('patient'), o.getSchedule('strict')]);
            return both.every(
              (x) => x.status?.lastScheduleTime && new Date(x.status.lastScheduleTime) >= latest!,
            )
              ? both
              : undefined;
          },
          MINUTE,
          500,
        );
        const names = (await o.backups()).map((x) => x.metadata.name);
        // The long deadline: the latest run made once, the one before it counted.
        expect(names).toContain(backupName('patient', latest!));
        expect(names).not.toContain(backupName('patient', missed!));
        expect(patient.status?.missedRuns).toBe(1);
        expect(o.condition(patient, 'LastRun')).toMatchObject({ status: 'True', reason: 'BackupCreated' });
        // The watcher's restart brought one tick, for the latest run. Where the ticks waited in the
        // stream, the older one was handled first (Superseded), or replaced by the newer one while
        // it waited (the runtime coalesces an object's waiting ticks): the count is the same.
        if (o === whole)
          expect(o.condition(patient, 'LastRun')?.message).toContain('1 earlier run(s) were missed');
        // The short deadline: both skipped and counted.
        expect(names).not.toContain(backupName('strict', missed!));
        expect(names).not.toContain(backupName('strict', latest!));
        expect(strict.status).toMatchObject({ lastScheduleTime: rfc(latest!), missedRuns: 2 });
        expect(o.condition(strict, 'LastRun')).toMatchObject({ status: 'False', reason: 'MissedDeadline' });
        expect(await o.reasons('strict')).toContain('MissedDeadline');
      }
    },
    8 * MINUTE,
  );

  it(
    'retention prunes only Completed (and surplus Failed) Backups of the schedule, by its policy in its time zone, never the newest',
    async () => {
      const o = await operator('sched-ret');
      // Yearly, so no run happens here; the Backups below are made by the test for a cluster that
      // does not exist, so no backup function would start them either.
      const s = await o.createSchedule('keep', {
        cluster: { name: 'gone' },
        schedule: '0 0 1 1 *',
        timeZone: 'Asia/Tokyo',
      });
      // How a Backup names its schedule: the annotations the schedule writes, the controller owner
      // reference older versions wrote, nothing (labels only), or an earlier schedule's uid.
      const marks = {
        made: {
          annotations: { 'tideway.dev/schedule-name': 'keep', 'tideway.dev/schedule-uid': s.metadata.uid },
        },
        legacy: {
          ownerReferences: [
            {
              apiVersion: 'tideway.dev/v1alpha1',
              kind: 'BackupSchedule',
              name: 'keep',
              uid: s.metadata.uid,
              controller: true,
            },
          ],
        },
        none: {},
        earlier: {
          annotations: { 'tideway.dev/schedule-name': 'keep', 'tideway.dev/schedule-uid': 'an-earlier-uid' },
        },
      };
      const fixture = async (
        name: string,
        phase: string,
        startedAt: string,
        mark: keyof typeof marks = 'made',
      ) => {
        await b.custom.createNamespacedCustomObject({
          ...BACKUP,
          namespace: o.ns,
          body: {
            apiVersion: 'tideway.dev/v1alpha1',
            kind: 'Backup',
            metadata: {
              name,
              labels: { 'tideway.dev/schedule': 'keep', 'tideway.dev/cluster': 'gone' },
              ...marks[mark],
            },
            spec: { cluster: { name: 'gone' } },
          },
        });
        await o.setStatus(name, {
          phase,
          startedAt,
          ...(phase === 'Completed' || phase === 'Failed' ? { completedAt: startedAt } : {}),
        });
      };
      // Tokyo is UTC+9: c4 is 10 January there, 9 January in UTC.
      await fixture('c1', 'Completed', '2026-01-08T12:00:00Z', 'legacy');
      await fixture('c2', 'Completed', '2026-01-09T10:00:00Z');
      await fixture('c3', 'Completed', '2026-01-09T14:30:00Z');
      await fixture('c4', 'Completed', '2026-01-09T15:30:00Z');
      await fixture('c5', 'Completed', '2026-01-10T01:00:00Z');
      for (const d of [1, 2, 3, 4, 5]) await fixture(`f${d}`, 'Failed', `2026-01-0${d}T00:00:00Z`);
      await fixture('p', 'Pending', '2025-01-01T00:00:00Z');
      await fixture('r', 'Running', '2025-01-02T00:00:00Z');
      // Labelled alike but not the schedule's: never counted, never deleted.
      await fixture('forged', 'Completed', '2025-06-01T00:00:00Z', 'none');
      await fixture('earlier', 'Completed', '2025-06-02T00:00:00Z', 'earlier');

      const left = (expected: string[]) =>
        until(
          `only ${expected.join(', ')} left`,
          async () => {
            const names = (await o.backups()).map((x) => x.metadata.name).sort();
            return JSON.stringify(names) === JSON.stringify([...expected].sort()) ? names : undefined;
          },
          MINUTE,
          500,
        );

      // No policy: every Completed one stays; of the Failed, the newest three.
      await o.patchSchedule('keep', { retention: {} });
      await left(['c1', 'c2', 'c3', 'c4', 'c5', 'f3', 'f4', 'f5', 'p', 'r', 'forged', 'earlier']);
      // The one an older version made is moved off the owner reference the garbage collector follows.
      const legacy = await until(
        'c1 released from its owner reference',
        async () => {
          const x = (await o.backups()).find((y) => y.metadata.name === 'c1');
          return (x?.metadata as { ownerReferences?: unknown } | undefined)?.ownerReferences ? undefined : x;
        },
        MINUTE,
        500,
      );
      expect(legacy.metadata.annotations).toMatchObject(marks.made.annotations);

      // keepLast 1 and keepDaily 2, in Tokyo's days: c5 (newest, 10 Jan) and c3 (newest of 9 Jan).
      // In UTC keepDaily would have kept c4 instead.
      await o.patchSchedule('keep', { retention: { keepLast: 1, keepDaily: 2 } });
      await left(['c3', 'c5', 'f3', 'f4', 'f5', 'p', 'r', 'forged', 'earlier']);

      // maxAge: all are older than an hour, but the newest Completed stays; Pending and Running too.
      await o.patchSchedule('keep', { retention: { maxAge: '1h' } });
      await left(['c5', 'p', 'r', 'forged', 'earlier']);
      const status = await until(
        'the status after pruning',
        async () => {
          const sc = await o.getSchedule('keep');
          return sc.status?.observedGeneration === sc.metadata.generation ? sc : undefined;
        },
        MINUTE,
      );
      expect(status.status).toMatchObject({ lastSuccessfulBackup: 'c5', active: ['p', 'r'] });
      expect(o.condition(status, 'Retention')).toMatchObject({ status: 'True', reason: 'Applied' });
      // The schedule's cluster does not exist: that is what Ready says (retention still runs).
      expect(o.condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'ClusterNotFound' });
      expect((await o.reasons('keep')).filter((r) => r === 'Pruned')).toHaveLength(9);
    },
    5 * MINUTE,
  );

  it(
    'bad input gets a reason that names the fix: unknown cluster, unknown time zone, a name taken',
    async () => {
      const o = await operator('sched-bad');
      await o.createCluster('cache');
      await earlyInMinute(45);
      // Someone else's Backups carry the names of the next two runs of `taken`.
      const next = Math.ceil(Date.now() / MINUTE) * MINUTE;
      for (const t of [next, next + MINUTE])
        await b.custom.createNamespacedCustomObject({
          ...BACKUP,
          namespace: o.ns,
          body: {
            apiVersion: 'tideway.dev/v1alpha1',
            kind: 'Backup',
            metadata: { name: backupName('taken', new Date(t)) },
            spec: { cluster: { name: 'cache' } },
          },
        });
      await o.createSchedule('taken', { cluster: { name: 'cache' }, schedule: '* * * * *' });
      await o.createSchedule('orphan', { cluster: { name: 'nope' }, schedule: '* * * * *' });
      await o.createSchedule('mars', {
        cluster: { name: 'cache' },
        schedule: '@daily',
        timeZone: 'Mars/Olympus',
      });

      const mars = await until('mars Ready=False', async () => {
        const sc = await o.getSchedule('mars');
        return o.condition(sc, 'Ready') ? sc : undefined;
      });
      expect(o.condition(mars, 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidTimeZone' });
      expect(o.condition(mars, 'Ready')?.message).toContain('spec.timeZone "Mars/Olympus"');
      expect(mars.status?.nextScheduleTime).toBeUndefined();

      const [taken, orphan] = await until(
        'a run of each',
        async () => {
          const both = await Promise.all([o.getSchedule('taken'), o.getSchedule('orphan')]);
          return both.every((x) => x.status?.lastScheduleTime) ? both : undefined;
        },
        1.5 * MINUTE,
        500,
      );
      expect(o.condition(taken, 'LastRun')).toMatchObject({ status: 'False', reason: 'NameTaken' });
      expect(o.condition(taken, 'LastRun')?.message).toContain('is not this schedule');
      // The other Backups are left as they were: no owner added, none deleted.
      const foreign = await o.backups();
      expect(foreign).toHaveLength(2);
      for (const x of foreign)
        expect((x.metadata as { ownerReferences?: unknown }).ownerReferences).toBeUndefined();

      expect(o.condition(orphan, 'LastRun')).toMatchObject({ status: 'False', reason: 'ClusterNotFound' });
      expect(o.condition(orphan, 'Ready')).toMatchObject({ status: 'False', reason: 'ClusterNotFound' });
      expect(o.condition(orphan, 'Ready')?.message).toContain('spec.cluster.name');
      expect(await o.backups('orphan')).toEqual([]);
    },
    4 * MINUTE,
  );

  it(
    'a tick delivered again, or late, makes no second Backup and counts nothing twice, even after its Backup was deleted',
    async () => {
      // No watcher: the test delivers the ticks, as the bus may (again, late, side by side).
      const o = await operator('sched-dup', 2, false);
      await o.createCluster('cache');
      const s = await o.createSchedule('dup', { cluster: { name: 'cache' }, schedule: '* * * * *' });
      await earlyInMinute(40);
      const run = new Date(Math.floor(Date.now() / MINUTE) * MINUTE);
      // The last run handled three minutes ago: the two in between were missed.
      await b.kubectl(
        'patch',
        'backupschedules.tideway.dev',
        'dup',
        '-n',
        o.ns,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { lastScheduleTime: new Date(run.getTime() - 3 * MINUTE).toISOString() } }),
      );
      await using bus = await connectBus(b.info.natsUrl, 'test-schedule-dup');
      const publisher = jetStreamPublisher(bus.js);
      let copy = 0;
      /** The watcher's tick for `at`, under a new id each time, so JetStream does not drop it as a copy. */
      const tick = (at: Date, missedBefore = 0) =>
        publisher.publish(
          tickEvent('/test', EventType.scheduleTick, 'BackupSchedule', s, `${at.toISOString()}#${copy++}`, {
            scheduledTime: at.toISOString(),
            missedBefore,
          }),
        );
      const handled = (at: Date) =>
        until(`the run at ${at.toISOString()} recorded`, async () => {
          const sc = await o.getSchedule('dup');
          return sc.status?.lastScheduleTime && new Date(sc.status.lastScheduleTime) >= at ? sc : undefined;
        });

      /** Every message of the schedule function's consumer handled (acked), retries included. */
      const drained = () =>
        until('the schedule function idle', async () => {
          const c = await consumerBacklog(bus.jsm, 'schedule', o.ns);
          return c.missing === 0 && c.pending + c.ackPending === 0 ? true : undefined;
        });

      // The tick's own count (5) is not what counts: the status says two runs were missed.
      await tick(run, 5);
      const first = await handled(run);
      expect(first.status?.missedRuns).toBe(2);
      expect((await o.backups('dup')).map((x) => x.metadata.name)).toEqual([backupName('dup', run)]);
      await o.completeAll('dup'); // or the run's tick keeps coming back to see it finish

      // The same tick twice more, at once (two replicas may take them side by side), and an older one.
      await Promise.all([tick(run, 5), tick(run, 5), tick(new Date(run.getTime() - MINUTE))]);
      await drained();
      expect((await o.backups('dup')).map((x) => x.metadata.name)).toEqual([backupName('dup', run)]);
      // Then the run's Backup goes (as retention or a user may delete it), and the tick comes once more.
      await b.custom.deleteNamespacedCustomObject({
        ...BACKUP,
        namespace: o.ns,
        name: backupName('dup', run),
      });
      await tick(run, 5);
      await drained();

      const after = await o.getSchedule('dup');
      expect(after.status).toMatchObject({
        lastScheduleTime: rfc(run),
        missedRuns: 2,
      });
      expect(await o.backups('dup')).toEqual([]);
      expect((await o.reasons('dup')).filter((r) => r === 'BackupCreated')).toHaveLength(1);
    },
    3 * MINUTE,
  );

  it('the schedule function may make, list, delete and patch Backups and write schedule status, and nothing more', async () => {
    const authz = b.kc.makeApiClient(AuthorizationV1Api);
    const can = async (verb: string, resource: string, subresource?: string, group = 'tideway.dev') =>
      (
        await authz.createSubjectAccessReview({
          body: {
            spec: {
              user: `system:serviceaccount:${SYSTEM_NAMESPACE}:tideway-schedule`,
              groups: [
                'system:serviceaccounts',
                `system:serviceaccounts:${SYSTEM_NAMESPACE}`,
                'system:authenticated',
              ],
              resourceAttributes: { verb, group, resource, subresource, namespace: 'anywhere' },
            },
          },
        })
      ).status?.allowed === true;
    const asks = {
      allowed: [
        ['create', 'backups'],
        ['delete', 'backups'],
        ['list', 'backups'],
        ['patch', 'backups'],
        ['get', 'backupschedules'],
        ['update', 'backupschedules', 'status'],
        ['get', 'redisclusters'],
        ['create', 'events', undefined, 'events.k8s.io'],
      ],
      denied: [
        ['update', 'backups'],
        ['update', 'backups', 'status'],
        ['patch', 'backupschedules'],
        ['delete', 'backupschedules'],
        ['patch', 'backupschedules', 'status'],
        ['update', 'redisclusters', 'status'],
        ['delete', 'redisclusters'],
        ['get', 'secrets', undefined, ''],
        ['list', 'pods', undefined, ''],
      ],
    } as const;
    for (const [expected, list] of [
      [true, asks.allowed],
      [false, asks.denied],
    ] as const)
      for (const [verb, resource, sub, group] of list)
        expect({ verb, resource, sub, allowed: await can(verb, resource, sub, group) }).toEqual({
          verb,
          resource,
          sub,
          allowed: expected,
        });
  });
});
