import { describe, expect, it } from 'vitest';
import { ackWaitMsOf, ConfigError, nodeArgsFor, parseServerless, toMs } from './config.ts';

const valid = `
service: tideway
provider: { name: tideway, runtime: nodejs24.x }
functions:
  reconcile:
    handler: functions/reconcile/index.handler
    timeout: 30
    events:
      - cloudevent: { type: dev.tideway.resource.*, kind: RedisCluster }
  watcher:
    handler: functions/watcher/index.start
    tideway: { service: true, replicas: 2 }
`;

describe('serverless.yml', () => {
  it('parses the Serverless Framework shape with defaults', () => {
    const c = parseServerless(valid);
    expect(c.functions.reconcile).toMatchObject({
      timeout: 30,
      reservedConcurrency: 8,
      maximumRetryAttempts: 10,
      tideway: { service: false, replicas: 1, failureCondition: 'Reconciled' },
    });
    expect(c.functions.watcher?.tideway).toMatchObject({ service: true, replicas: 2 });
  });

  it('says where and what is wrong', () => {
    const bad = valid
      .replace('dev.tideway.resource.*', 'resource.changed')
      .replace('timeout: 30', 'timeout: 0');
    expect(() => parseServerless(bad)).toThrow(ConfigError);
    try {
      parseServerless(bad);
    } catch (e) {
      expect((e as Error).message).toMatch(
        /functions\.reconcile\.events\.0\.cloudevent\.type: a Tideway event type/,
      );
      expect((e as Error).message).toMatch(/functions\.reconcile\.timeout/);
    }
  });

  it('refuses a handler function without events', () => {
    expect(() => parseServerless(valid.replace(/ {4}events:\n.*\n/, ''))).toThrow(/reconcile has no events/);
  });

  it('refuses unknown keys rather than ignoring them', () => {
    expect(() => parseServerless(valid.replace('timeout: 30', 'timeout: 30\n    timout: 5'))).toThrow(
      /timout/,
    );
  });

  it('reads durations', () => {
    expect([toMs('500ms'), toMs('5s'), toMs('2m'), toMs(7)]).toEqual([500, 5000, 120000, 7]);
  });

  it('derives the ack wait from the timeout unless set, and refuses one under a second', () => {
    const fn = parseServerless(valid).functions.reconcile!;
    expect(ackWaitMsOf(fn)).toBe(30_000);
    expect(ackWaitMsOf({ ...fn, timeout: 90 })).toBe(90_000);
    expect(ackWaitMsOf({ ...fn, timeout: 600 })).toBe(120_000);
    const set = valid.replace('timeout: 30', 'timeout: 30\n    tideway: { ackWait: 2s }');
    expect(ackWaitMsOf(parseServerless(set).functions.reconcile!)).toBe(2000);
    expect(() => parseServerless(set.replace('2s', '500ms'))).toThrow(/tideway\.ackWait: at least 1s/);
  });
});

describe('nodeArgsFor', () => {
  it('turns memorySize into a heap limit of half of it, and nothing without one', () => {
    expect(nodeArgsFor({ memorySize: 256 })).toEqual(['--max-old-space-size=128', '--max-semi-space-size=4']);
    expect(nodeArgsFor({ memorySize: 512 })).toEqual(['--max-old-space-size=256', '--max-semi-space-size=8']);
    expect(nodeArgsFor({ memorySize: 1024 })).toEqual([
      '--max-old-space-size=512',
      '--max-semi-space-size=16',
    ]);
    expect(nodeArgsFor({ memorySize: 4096 })[1]).toBe('--max-semi-space-size=16');
    expect(nodeArgsFor({ memorySize: 128 })[1]).toBe('--max-semi-space-size=2');
    expect(nodeArgsFor({})).toEqual([]);
  });
});
