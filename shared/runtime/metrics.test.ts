import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.ts';
import { createMetrics } from './metrics.ts';

describe('metrics', () => {
  it('renders counters, gauges and histograms in the Prometheus text format', () => {
    const m = createMetrics({ tideway_events_received_total: 'Events received' });
    m.inc('tideway_events_received_total', { function: 'reconcile' });
    m.inc('tideway_events_received_total', { function: 'reconcile' });
    m.set('tideway_consumer_lag', 4, { function: 'reconcile' });
    m.observe('tideway_handler_duration_seconds', 0.02, { function: 'reconcile' });
    const text = m.render();
    expect(text).toContain('# HELP tideway_events_received_total Events received');
    expect(text).toContain('tideway_events_received_total{function="reconcile"} 2');
    expect(text).toContain('tideway_consumer_lag{function="reconcile"} 4');
    expect(text).toContain('tideway_handler_duration_seconds_bucket{function="reconcile",le="0.01"} 0');
    expect(text).toContain('tideway_handler_duration_seconds_bucket{function="reconcile",le="0.025"} 1');
    expect(text).toContain('tideway_handler_duration_seconds_count{function="reconcile"} 1');
  });
});

describe('logger', () => {
  it('writes JSON lines with bound fields and never writes secret-looking fields', () => {
    const lines: string[] = [];
    const log = createLogger({ function: 'backup' }, { write: (l) => lines.push(l) }).child({ event: 'e1' });
    log.info('started', { password: 'hunter2', secretAccessKey: 'x', object: 'ns/a' });
    const line = JSON.parse(lines[0] ?? '{}');
    expect(line).toMatchObject({
      level: 'info',
      msg: 'started',
      function: 'backup',
      event: 'e1',
      object: 'ns/a',
    });
    expect(line.password).toBe('[redacted]');
    expect(line.secretAccessKey).toBe('[redacted]');
    expect(lines[0]).not.toContain('hunter2');
  });
});
