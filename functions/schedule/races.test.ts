import { describe, expect, it } from 'vitest';
import { EventType } from '../../shared/events/types.ts';
import {
  backupObj,
  clusterObj,
  eventOf,
  fakeKube,
  minutesAgo,
  scheduleObj,
  thisMinute,
  tick,
} from './fixture.ts';
import { handler } from './index.ts';

describe('schedule runs beside Backups that change (whole handler runs on an in-memory API)', () => {
  it('Replace keeps a Backup that completed between the look and the delete: the newest Completed is never deleted', async () => {
    const k = fakeKube();
    const at = thisMinute();
    k.put(
      'backupschedules',
      scheduleObj({ schedule: '* * * * *', concurrencyPolicy: 'Replace', retention: { keepLast: 1 } }),
    );
    k.put('redisclusters', clusterObj());
    k.put('backups', backupObj('nightly-old', 'Completed', minutesAgo(10)));
    k.put('backups', backupObj('nightly-prev', 'Running', minutesAgo(1)));
    // While the tick makes its Backup, the backup function finishes nightly-prev, and the
    // schedule's run on that change goes beside the tick (it locks the Backup, not the schedule).
    k.hooks.create = async () => {
      k.hooks.create = undefined;
      k.update('backups', 'nightly-prev', (o) => {
        o.status = { ...o.status, phase: 'Completed', completedAt: new Date().toISOString() };
      });
      await handler(eventOf(EventType.updated, 'Backup', 'nightly-prev'), k.ctx);
    };
    await tick(k, at);
    expect(k.calls.filter((c) => c.startsWith('delete'))).toEqual(['delete backups/nightly-old (Completed)']);
    expect(k.backups()).toContain('nightly-prev:Completed');
    const conditions = (k.get('backupschedules', 'nightly')?.status?.conditions ?? []) as {
      type: string;
      message: string;
    }[];
    const lastRun = conditions.find((c) => c.type === 'LastRun');
    expect(lastRun?.message).toContain('nightly-prev finished meanwhile and is kept');
  });

  it('Replace still deletes a Backup that is unfinished, however often its progress changed it', async () => {
    const k = fakeKube();
    const at = thisMinute();
    k.put('backupschedules', scheduleObj({ schedule: '* * * * *', concurrencyPolicy: 'Replace' }));
    k.put('redisclusters', clusterObj());
    k.put('backups', backupObj('nightly-prev', 'Running', minutesAgo(1)));
    let progress = 0;
    k.hooks.create = () => {
      k.hooks.create = undefined;
      k.update('backups', 'nightly-prev', (o) => {
        o.status = { ...o.status, progress: { bytes: ++progress } };
      });
    };
    await tick(k, at);
    expect(k.calls.filter((c) => c.startsWith('delete'))).toEqual(['delete backups/nightly-prev (Running)']);
  });

  it('Replace deletes by the resourceVersion it saw unfinished: one that completes just before the delete is kept', async () => {
    const k = fakeKube();
    const at = thisMinute();
    k.put('backupschedules', scheduleObj({ schedule: '* * * * *', concurrencyPolicy: 'Replace' }));
    k.put('redisclusters', clusterObj());
    k.put('backups', backupObj('nightly-prev', 'Running', minutesAgo(1)));
    // Between the Replace's look at it (Running) and its delete request, the Backup completes.
    k.hooks.delete = (a) => {
      if (a.name !== 'nightly-prev') return;
      k.hooks.delete = undefined;
      k.update('backups', 'nightly-prev', (o) => {
        o.status = { ...o.status, phase: 'Completed' };
      });
    };
    await tick(k, at);
    expect(k.backups()).toContain('nightly-prev:Completed');
    expect(k.calls.filter((c) => c.startsWith('delete'))).toEqual([]);
  });

  it('reads a starting deadline admitted before the 10 s floor as 10 s: its runs are still made', async () => {
    const k = fakeKube();
    k.put('backupschedules', scheduleObj({ schedule: '* * * * *', startingDeadlineSeconds: 0 }));
    k.put('redisclusters', clusterObj());
    const at = thisMinute();
    await tick(k, at); // 2 s late, as ticks are
    expect(k.calls.filter((c) => c.startsWith('create'))).toHaveLength(1);
  });

  it('does not prune by a retention policy the user replaced while the run was under way', async () => {
    const k = fakeKube();
    k.put('backupschedules', scheduleObj({ retention: { keepLast: 1 } }));
    k.put('redisclusters', clusterObj());
    for (const d of [1, 2, 3])
      k.put('backups', backupObj(`nightly-d${d}`, 'Completed', minutesAgo(d * 1440)));
    let gets = 0;
    k.hooks.get = (a) => {
      if (a.plural !== 'backupschedules' || ++gets !== 2) return;
      // After the run read the schedule, before it prunes: retention removed (generation 2).
      k.update('backupschedules', 'nightly', (o) => {
        o.spec = { ...o.spec, retention: {} };
        o.metadata.generation = 2;
      });
    };
    await handler(eventOf(EventType.updated, 'Backup', 'nightly-d1'), k.ctx);
    expect(k.calls.filter((c) => c.startsWith('delete'))).toEqual([]);
    expect(k.backups()).toEqual(['nightly-d1:Completed', 'nightly-d2:Completed', 'nightly-d3:Completed']);
    expect(k.get('backupschedules', 'nightly')?.status?.observedGeneration).toBeUndefined();
  });

  it('weighs each cluster’s Backups on their own: a new cluster’s first backup never pushes out the old one’s last', async () => {
    const k = fakeKube();
    k.put(
      'backupschedules',
      scheduleObj({ cluster: { name: 'cache-b', kind: 'RedisCluster' }, retention: { keepLast: 1 } }),
    );
    k.put('redisclusters', clusterObj('cache-b'));
    k.put('backups', backupObj('nightly-a1', 'Completed', minutesAgo(3000), 'cache-a'));
    k.put('backups', backupObj('nightly-a2', 'Completed', minutesAgo(1440), 'cache-a'));
    k.put('backups', backupObj('nightly-b1', 'Completed', minutesAgo(120), 'cache-b'));
    k.put('backups', backupObj('nightly-b2', 'Completed', minutesAgo(60), 'cache-b'));
    await handler(eventOf(EventType.updated, 'Backup', 'nightly-b2'), k.ctx);
    // keepLast 1 for each cluster: the older of each goes, the newest of each stays.
    expect(k.backups()).toEqual(['nightly-a2:Completed', 'nightly-b2:Completed']);
  });
});

describe('retention with no Backups yet', () => {
  it('still says when the policy is bad', async () => {
    const k = fakeKube();
    k.put('backupschedules', scheduleObj({ retention: { maxAge: '0s' } }));
    k.put('redisclusters', clusterObj());
    await handler(eventOf(EventType.updated, 'BackupSchedule', 'nightly', {}, 'sched-uid'), k.ctx);
    const conditions = (k.get('backupschedules', 'nightly')?.status?.conditions ?? []) as {
      type: string;
      reason: string;
    }[];
    expect(conditions.find((c) => c.type === 'Retention')?.reason).toBe('InvalidRetention');
  });
});

describe('retention while suspended', () => {
  it('goes on: maxAge prunes the older Backups, never the newest Completed, and no run is made', async () => {
    const k = fakeKube();
    k.put(
      'backupschedules',
      scheduleObj({ schedule: '* * * * *', suspend: true, retention: { keepLast: 5, maxAge: '1h' } }),
    );
    k.put('redisclusters', clusterObj());
    k.put('backups', backupObj('nightly-3h', 'Completed', minutesAgo(180)));
    k.put('backups', backupObj('nightly-2h', 'Completed', minutesAgo(120)));
    await handler(eventOf(EventType.updated, 'BackupSchedule', 'nightly', {}, 'sched-uid'), k.ctx);
    expect(k.calls.filter((c) => c.startsWith('delete') || c.startsWith('create'))).toEqual([
      'delete backups/nightly-3h (Completed)',
    ]);
    expect(k.backups()).toEqual(['nightly-2h:Completed']);
  });

  it('on the watcher’s retention look, which is no run (suspended or not)', async () => {
    for (const suspend of [true, false]) {
      const k = fakeKube();
      k.put(
        'backupschedules',
        scheduleObj({ schedule: '0 3 1 * *', suspend, retention: { keepLast: 5, maxAge: '1h' } }),
      );
      k.put('redisclusters', clusterObj());
      k.put('backups', backupObj('nightly-3h', 'Completed', minutesAgo(180)));
      k.put('backups', backupObj('nightly-2h', 'Completed', minutesAgo(120)));
      const look = eventOf(EventType.retentionTick, 'BackupSchedule', 'nightly', {}, 'sched-uid');
      expect(await handler(look, k.ctx)).toEqual({ kind: 'done' });
      expect(
        k.calls.filter((c) => c.startsWith('delete') || c.startsWith('create')),
        `suspend ${suspend}`,
      ).toEqual(['delete backups/nightly-3h (Completed)']);
      expect(k.get('backupschedules', 'nightly')?.status?.lastScheduleTime).toBeUndefined();
    }
  });
});

describe('Backups made by earlier versions (a controller owner reference to the schedule)', () => {
  const owner = (uid: string, controller = true) => ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'BackupSchedule',
    name: 'nightly',
    uid,
    controller,
  });
  const legacy = (name: string, refs: object[]) => {
    const b = backupObj(name, 'Completed', minutesAgo(30));
    b.metadata.annotations = {};
    b.metadata.ownerReferences = refs;
    return b;
  };
  const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'keeper', uid: 'cm-uid' };

  it('are moved to the annotations; the schedule’s reference goes, any other owner stays', async () => {
    const k = fakeKube();
    k.put('backupschedules', scheduleObj({ schedule: '0 3 * * *' }));
    k.put('redisclusters', clusterObj());
    k.put('backups', legacy('nightly-a', [owner('sched-uid')]));
    k.put('backups', legacy('nightly-b', [other, owner('sched-uid')]));
    k.put('backups', legacy('nightly-earlier', [owner('an-earlier-uid')]));
    await handler(eventOf(EventType.updated, 'BackupSchedule', 'nightly', {}, 'sched-uid'), k.ctx);
    const meta = (name: string) => k.get('backups', name)?.metadata;
    expect(meta('nightly-a')?.ownerReferences).toBeUndefined();
    expect(meta('nightly-b')?.ownerReferences).toEqual([other]);
    for (const name of ['nightly-a', 'nightly-b'])
      expect(meta(name)?.annotations).toEqual({
        'tideway.dev/schedule-name': 'nightly',
        'tideway.dev/schedule-uid': 'sched-uid',
      });
    // An earlier schedule's is not this one's to move.
    expect(meta('nightly-earlier')?.ownerReferences).toEqual([owner('an-earlier-uid')]);
    expect(k.calls.filter((c) => c.startsWith('patch'))).toEqual([
      'patch backups/nightly-a',
      'patch backups/nightly-b',
    ]);
  });

  it('one changed between the look and the patch is moved at the next look, never with a stale list', async () => {
    const k = fakeKube();
    k.put('backupschedules', scheduleObj({ schedule: '0 3 * * *' }));
    k.put('redisclusters', clusterObj());
    k.put('backups', legacy('nightly-a', [owner('sched-uid')]));
    const api = k.ctx.kube.makeApiClient(Object) as unknown as Record<
      string,
      (a: unknown) => Promise<unknown>
    >;
    const patch = api.patchNamespacedCustomObject?.bind(api);
    let raced = false;
    api.patchNamespacedCustomObject = async (a) => {
      if (!raced) {
        raced = true;
        // Someone adds an owner meanwhile: a patch with the list read before would drop it.
        k.update('backups', 'nightly-a', (o) => {
          o.metadata.ownerReferences = [...(o.metadata.ownerReferences ?? []), other];
        });
      }
      return patch?.(a);
    };
    await handler(eventOf(EventType.updated, 'BackupSchedule', 'nightly', {}, 'sched-uid'), k.ctx);
    expect(k.get('backups', 'nightly-a')?.metadata.ownerReferences).toEqual([owner('sched-uid'), other]);
    await handler(eventOf(EventType.updated, 'BackupSchedule', 'nightly', {}, 'sched-uid'), k.ctx);
    expect(k.get('backups', 'nightly-a')?.metadata.ownerReferences).toEqual([other]);
  });
});

describe('a Backup that cannot be released from the owner reference', () => {
  it('is a Warning on the schedule, and retention and status go on', async () => {
    const k = fakeKube();
    k.put('backupschedules', scheduleObj({ schedule: '0 3 * * *', retention: { keepLast: 1 } }));
    k.put('redisclusters', clusterObj());
    const old = backupObj('nightly-old', 'Completed', minutesAgo(60));
    old.metadata.annotations = {};
    old.metadata.ownerReferences = [
      {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'BackupSchedule',
        name: 'nightly',
        uid: 'sched-uid',
        controller: true,
      },
    ];
    k.put('backups', old);
    k.put('backups', backupObj('nightly-new', 'Completed', minutesAgo(30)));
    const api = k.ctx.kube.makeApiClient(Object) as unknown as Record<
      string,
      (a: unknown) => Promise<unknown>
    >;
    const events: string[] = [];
    api.patchNamespacedCustomObject = async () => {
      throw Object.assign(new Error('HTTP 403: forbidden'), { code: 403 });
    };
    api.createNamespacedEvent = async (a) => {
      const body = (a as { body: { reason: string; type: string } }).body;
      events.push(`${body.type} ${body.reason}`);
      return {};
    };
    await handler(eventOf(EventType.updated, 'BackupSchedule', 'nightly', {}, 'sched-uid'), k.ctx);
    expect(events).toContain('Warning NotReleased');
    expect(k.backups()).toEqual(['nightly-new:Completed']);
  });
});

describe('a changed cron or time zone', () => {
  /** nightly, once `0 3 * * *` (recorded), now `schedule`; its last run 20 hours before `at`. */
  const changed = (at: Date, schedule: string, old = '0 3 * * *') => {
    const k = fakeKube();
    const s = scheduleObj({ schedule });
    const long = new Date(at.getTime() - 30 * 86_400_000).toISOString();
    s.status = {
      lastScheduleTime: new Date(at.getTime() - 20 * 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      missedRuns: 0,
      schedule: { expression: old, timeZone: 'UTC', since: long },
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Scheduled', message: '', lastTransitionTime: long },
      ],
    };
    k.put('backupschedules', s);
    k.put('redisclusters', clusterObj());
    const status = () => k.get('backupschedules', 'nightly')?.status as Record<string, unknown>;
    return { k, status };
  };

  it('counts no fire of the new cron before the change as missed', async () => {
    const at = thisMinute();
    const { k, status } = changed(at, '* * * * *');
    // The change is seen (its own event) a minute before the new cron's next fire.
    Object.assign(k.ctx, { clock: () => new Date(at.getTime() - 60_000) });
    await handler(eventOf(EventType.updated, 'BackupSchedule', 'nightly', {}, 'sched-uid'), k.ctx);
    expect(status().schedule).toMatchObject({ expression: '* * * * *', timeZone: 'UTC' });
    await tick(k, at);
    expect(status()).toMatchObject({
      missedRuns: 0,
      lastScheduleTime: at.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
    expect(k.backups()).toHaveLength(1);
  });

  /** spec.schedule written at `t` (by a user's kubectl), and what else the API server recorded. */
  const writtenAt = (k: ReturnType<typeof fakeKube>, t: Date, more: object[] = []) => {
    const s = k.get('backupschedules', 'nightly') as { metadata: Record<string, unknown> };
    s.metadata.managedFields = [
      {
        manager: 'kubectl-edit',
        operation: 'Update',
        time: t.toISOString().replace(/\.\d{3}Z$/, 'Z'),
        fieldsV1: { 'f:spec': { 'f:schedule': {} } },
      },
      ...more,
    ];
  };

  it('counts from when the change was written, though the function saw it later (it was down)', async () => {
    const at = thisMinute();
    const { k, status } = changed(at, '* * * * *');
    // Written ten minutes before the run, by a user's kubectl; the function was down meanwhile.
    writtenAt(k, new Date(at.getTime() - 10 * 60_000), [
      {
        manager: 'tideway',
        operation: 'Update',
        subresource: 'status',
        time: new Date(at.getTime() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        fieldsV1: { 'f:status': { 'f:schedule': {} } },
      },
    ]);
    await tick(k, at);
    // The nine fires of the new cron between the change and this run, not 1,200 since the last.
    expect(status()).toMatchObject({
      missedRuns: 9,
      lastScheduleTime: at.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
    expect(k.backups()).toHaveLength(1);
  });

  it('handles a fire of the earlier schedule ticked before the change as it was due', async () => {
    const at = thisMinute();
    // Every minute until a second after this run was ticked, then once a day.
    const { k, status } = changed(at, '0 3 * * *', '* * * * *');
    writtenAt(k, new Date(at.getTime() + 1000));
    await tick(k, at);
    expect(status()).toMatchObject({
      missedRuns: 0,
      lastScheduleTime: at.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
    expect(k.backups()).toHaveLength(1);
  });

  it('makes no run of a fire of the new cron from before the change (a new watcher ticked it)', async () => {
    const at = thisMinute();
    // Once a day until ten minutes after this minute, then every minute: this minute never fired.
    const { k, status } = changed(at, '* * * * *');
    writtenAt(k, new Date(at.getTime() + 10 * 60_000));
    const before = structuredClone(status());
    Object.assign(k.ctx, { clock: () => new Date(at.getTime() + 11 * 60_000) });
    await handler(
      eventOf(
        EventType.scheduleTick,
        'BackupSchedule',
        'nightly',
        { scheduledTime: at.toISOString() },
        'sched-uid',
      ),
      k.ctx,
    );
    expect(status()).toMatchObject({ missedRuns: 0, lastScheduleTime: before.lastScheduleTime });
    expect(k.backups()).toEqual([]);
  });
});
