import { describe, expect, it } from 'vitest';
import type { LoadedBackup } from '../../shared/backup/kube.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { createMetrics } from '../../shared/runtime/metrics.ts';
import { formatDuration, percentOf, recordMetrics } from './report.ts';
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
