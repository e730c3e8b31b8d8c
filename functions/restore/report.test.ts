import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../shared/runtime/metrics.ts';
import { recordMetrics } from './report.ts';
import { percentOf } from './run.ts';

describe('restore outcomes', () => {
  it('counts outcomes per cluster; the last success, keys and bytes only of completed restores', () => {
    const metrics = createMetrics();
    const ctx = { metrics, clock: () => new Date('2026-11-23T10:00:00Z') };
    const at = { namespace: 'prod', cluster: 'cache' };
    recordMetrics(ctx, { ...at, outcome: 'completed', seconds: 12.5, rdbBytes: 4000, keys: 42 });
    recordMetrics(ctx, { ...at, outcome: 'failed' });
    recordMetrics(ctx, { ...at, outcome: 'rolledback', seconds: 3 });
    const page = metrics.render();
    const labels = '{cluster="cache",namespace="prod"}';
    for (const outcome of ['completed', 'failed', 'rolledback'])
      expect(page).toContain(
        `tideway_restores_total{cluster="cache",namespace="prod",outcome="${outcome}"} 1`,
      );
    expect(page).toContain(`tideway_restore_last_success_timestamp_seconds${labels} 1795428000`);
    expect(page).toContain(`tideway_restore_last_keys${labels} 42`);
    expect(page).toContain(`tideway_restore_loaded_bytes_total${labels} 4000`);
    expect(page).toContain(`tideway_restore_duration_seconds_sum${labels} 15.5`);
  });

  it('says percent only of a known total, and never 100 before the end', () => {
    expect(percentOf(50, 200)).toBe(25);
    expect(percentOf(200, 200)).toBe(99);
    expect(percentOf(10, 0)).toBeUndefined();
  });
});
