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
import { backupName } from './names.ts';

const conditionOf = (k: ReturnType<typeof fakeKube>, type: string) =>
  (
    (k.get('backupschedules', 'nightly')?.status?.conditions ?? []) as { type: string; reason: string }[]
  ).find((c) => c.type === type);
/** A Backup no schedule made (no label, no annotations). */
const foreign = (name: string, uid: string) => {
  const b = backupObj(name, undefined, new Date());
  b.metadata.uid = uid;
  b.metadata.labels = {};
  b.metadata.annotations = {};
  return b;
};
const deletes = (k: ReturnType<typeof fakeKube>) => k.calls.filter((c) => c.startsWith('delete'));

describe('the schedule never deletes what is not its own (whole handler runs on an in-memory API)', () => {
  it("Replace, the run's name taken by a Backup not its own: the run is skipped (NameTaken), nothing replaced", async () => {
    const k = fakeKube();
    const at = thisMinute();
    k.put('backupschedules', scheduleObj({ schedule: '* * * * *', concurrencyPolicy: 'Replace' }));
    k.put('redisclusters', clusterObj());
    k.put('backups', backupObj('nightly-prev', 'Running', minutesAgo(1)));
    k.put('backups', foreign(backupName('nightly', at), 'someone-else'));
    await tick(k, at);
    expect(deletes(k)).toEqual([]);
    expect(k.backups()).toContain('nightly-prev:Running');
    expect(conditionOf(k, 'LastRun')?.reason).toBe('NameTaken');
  });

  it('Replace with the name free replaces the unfinished run (the same setup, the other answer)', async () => {
    const k = fakeKube();
    const at = thisMinute();
    k.put('backupschedules', scheduleObj({ schedule: '* * * * *', concurrencyPolicy: 'Replace' }));
    k.put('redisclusters', clusterObj());
    k.put('backups', backupObj('nightly-prev', 'Running', minutesAgo(1)));
    await tick(k, at);
    expect(deletes(k)).toEqual(['delete backups/nightly-prev (Running)']);
    expect(conditionOf(k, 'LastRun')?.reason).toBe('Replaced');
  });

  it('retention deletes by uid: a Backup made anew under a pruned name meanwhile stays', async () => {
    const k = fakeKube();
    k.put('backupschedules', scheduleObj({ retention: { keepLast: 1 } }));
    k.put('redisclusters', clusterObj());
    k.put('backups', backupObj('nightly-d1', 'Completed', minutesAgo(1440)));
    k.put('backups', backupObj('nightly-d2', 'Completed', minutesAgo(2880)));
    // Between retention's look and its delete, nightly-d2 is deleted and made anew by someone else.
    k.hooks.delete = (a) => {
      if (a.name !== 'nightly-d2') return;
      k.hooks.delete = undefined;
      k.put('backups', foreign('nightly-d2', 'uid-anew'));
    };
    await handler(eventOf(EventType.updated, 'Backup', 'nightly-d1'), k.ctx);
    expect(deletes(k)).toEqual([]);
    expect(k.get('backups', 'nightly-d2')?.metadata).toMatchObject({ uid: 'uid-anew' });
    expect(k.get('backups', 'nightly-d2')?.metadata.deletionTimestamp).toBeUndefined();
  });

  it('retention stops deleting once spec.retention changes under it: the change runs by its own rules', async () => {
    const k = fakeKube();
    k.put('backupschedules', scheduleObj({ retention: { keepLast: 1 } }));
    k.put('redisclusters', clusterObj());
    for (const days of [1, 2, 3, 4])
      k.put('backups', backupObj(`nightly-d${days}`, 'Completed', minutesAgo(1440 * days)));
    // After the first delete, someone loosens the rule again.
    k.hooks.delete = () => {
      k.hooks.delete = undefined;
      k.update('backupschedules', 'nightly', (o) => {
        o.spec = { ...o.spec, retention: { keepLast: 30 } };
        o.metadata.generation = 2;
      });
    };
    await handler(eventOf(EventType.updated, 'Backup', 'nightly-d1'), k.ctx);
    expect(deletes(k)).toHaveLength(1);
    expect(k.backups()).toHaveLength(3);
  });

  it('a tick of an earlier schedule of the same name (another uid) makes no Backup; its own does', async () => {
    const k = fakeKube();
    const at = thisMinute();
    k.put('backupschedules', scheduleObj({ schedule: '* * * * *' }));
    k.put('redisclusters', clusterObj());
    await tick(k, at, 'an-earlier-uid');
    expect(k.calls.filter((c) => c.startsWith('create'))).toEqual([]);
    await tick(k, at);
    expect(k.calls.filter((c) => c.startsWith('create'))).toEqual([
      `create backups/${backupName('nightly', at)}`,
    ]);
  });
});

describe('polling an unfinished run', () => {
  const polled = async (attempt: number) => {
    const k = fakeKube();
    const at = thisMinute();
    k.put('backupschedules', scheduleObj({ schedule: '* * * * *' }));
    k.put('redisclusters', clusterObj());
    Object.assign(k.ctx, { attempt, maxAttempts: 10 });
    return tick(k, at); // its Backup is made, and unfinished
  };

  it('comes back while the run is unfinished', async () => {
    expect(await polled(1)).toMatchObject({ kind: 'retry' });
  });

  it('stops one attempt short of the retry limit: the next tick takes over, never a RetriesExhausted', async () => {
    expect(await polled(9)).toMatchObject({ kind: 'done' });
  });
});
