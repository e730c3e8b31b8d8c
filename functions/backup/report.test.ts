import type { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import type { LoadedBackup } from '../../shared/backup/kube.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { createMetrics } from '../../shared/runtime/metrics.ts';
import { lockKey } from '../schedule/index.ts';
import { formatDuration, percentOf, publishOutcome, recordMetrics } from './report.ts';
import type { Taken } from './run.ts';

describe('backup status helpers', () => {
  it('says percent only of a known total, and never 100 before the end', () => {
    expect(percentOf(50, 200)).toBe(25);
    expect(percentOf(200, 200)).toBe(99);
    expect(percentOf(10, undefined)).toBeUndefined();
    expect(percentOf(10, 0)).toBeUndefined();
  });

  it('formats durations in seconds', () => {
    expect(formatDuration(12_345)).toBe('12.3s');
    expect(formatDuration(40)).toBe('0.0s');
  });

  it('exports the last success, the duration and the bytes per cluster', () => {
    const metrics = createMetrics();
    const ctx = { metrics, clock: () => new Date('2026-11-23T10:00:00Z') } as unknown as HandlerContext;
    const loaded = {
      key: { namespace: 'prod', name: 'b1' },
      backup: { spec: { cluster: { name: 'cache' } } },
    };
    const taken = { size: 1000, rdbSize: 4000 } as Taken;
    recordMetrics(ctx, loaded as unknown as LoadedBackup, taken, 12_500);
    recordMetrics(ctx, loaded as unknown as LoadedBackup, undefined, 0);
    const page = metrics.render();
    const labels = '{cluster="cache",namespace="prod"}';
    expect(page).toContain(`tideway_backup_last_success_timestamp_seconds${labels} 1795428000`);
    expect(page).toContain(`tideway_backup_duration_seconds_sum${labels} 12.5`);
    expect(page).toContain(`tideway_backup_stored_bytes_total${labels} 1000`);
    expect(page).toContain(`tideway_backup_last_rdb_bytes${labels} 4000`);
    expect(page).toContain('tideway_backups_total{cluster="cache",namespace="prod",outcome="completed"} 1');
    expect(page).toContain('tideway_backups_total{cluster="cache",namespace="prod",outcome="failed"} 1');
  });
});

describe('the outcome on the bus', () => {
  it('names the Backup’s schedule (the `schedule` extension), so its run locks that schedule', async () => {
    const published: CloudEvent<unknown>[] = [];
    const ctx = {
      clock: () => new Date('2026-11-27T03:00:00Z'),
      publisher: { publish: async (e: CloudEvent<unknown>) => void published.push(e) },
    } as unknown as HandlerContext;
    const loaded = (ownerReferences: unknown[]) =>
      ({
        key: { namespace: 'ns', name: 'nightly-202611270300' },
        backup: { metadata: { uid: 'u', ownerReferences }, spec: { cluster: { name: 'cache' } } },
      }) as unknown as LoadedBackup;
    const owner = {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'BackupSchedule',
      name: 'nightly',
      uid: 's',
      controller: true,
    };
    await publishOutcome(ctx, loaded([owner]), '/t', 'completed', {});
    await publishOutcome(ctx, loaded([]), '/t', 'completed', {});
    expect(published[0]).toMatchObject({ schedule: 'nightly', cluster: 'cache' });
    expect((published[1] as unknown as Record<string, unknown>).schedule).toBeUndefined();
    expect(lockKey(published[0] as CloudEvent<unknown>)).toBe(
      lockKey({ kind: 'BackupSchedule', namespace: 'ns', name: 'nightly' } as never),
    );
  });
});
