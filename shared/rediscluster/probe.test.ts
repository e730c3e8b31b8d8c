import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { fromInfo, probeInstances } from './probe.ts';

const info = (extra: string) =>
  `# Server\r\nredis_version:7.0.15\r\n# Persistence\r\n${extra}\r\n# Replication\r\nrole:master\r\nmaster_replid:abc\r\nmaster_repl_offset:42\r\n# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\ndb2:keys=4,expires=1,avg_ttl=9\r\n`;

describe('fromInfo', () => {
  it('reads role, history, version and the keys of every database', () => {
    expect(fromInfo(info('loading:0'))).toMatchObject({
      replication: { role: 'master', replid: 'abc', offset: 42 },
      keys: 7,
      version: '7.0.15',
      product: 'redis',
    });
  });

  it('does not count a server that is loading its data set as answering', () => {
    for (const loading of ['loading:1', 'loading:0\r\nasync_loading:1']) {
      const i = fromInfo(info(loading));
      expect(i.replication).toBeUndefined();
      expect(i.error).toBe('loading its data set');
    }
  });

  it('counts no keys for an empty keyspace', () => {
    expect(fromInfo('# Replication\r\nrole:slave\r\n# Keyspace\r\n').keys).toBe(0);
  });
});

describe('memory', () => {
  it('reads what the data set takes and the resident set from INFO memory', () => {
    const i = fromInfo(info('loading:0\r\n# Memory\r\nused_memory:1000\r\nused_memory_rss:2048'));
    expect(i.memory).toEqual({ used: 1000, rss: 2048, counted: 1000 });
    expect(i.maxmemory).toBeUndefined();
    expect(fromInfo(info('loading:0')).memory).toBeUndefined();
  });

  it('counts against maxmemory what Redis does: used_memory less the buffers it leaves out', () => {
    const i = fromInfo(
      info(
        'loading:0\r\n# Memory\r\nused_memory:5000\r\nused_memory_rss:8192\r\nmaxmemory:4096\r\nmaxmemory_policy:allkeys-lru\r\nmem_not_counted_for_evict:1200',
      ),
    );
    expect(i.memory).toEqual({ used: 5000, rss: 8192, counted: 3800 });
    expect(i.maxmemory).toEqual({ bytes: 4096, policy: 'allkeys-lru' });
  });

  it("takes the redis container's memory limit from the pod, not another container's", async () => {
    const pod = (containers: NonNullable<V1Pod['spec']>['containers'], name = 'cache-0'): V1Pod => ({
      metadata: { name },
      spec: { containers },
    });
    const [limited, sidecar, none] = await probeInstances(
      'cache',
      [
        pod([{ name: 'redis', resources: { limits: { memory: '1536Mi' } } }], 'cache-0'),
        pod(
          [
            { name: 'exporter', resources: { limits: { memory: '64Mi' } } },
            { name: 'redis', resources: { requests: { memory: '1Gi' } } },
          ],
          'cache-1',
        ),
        pod([{ name: 'redis' }], 'cache-2'),
      ],
      [],
    );
    expect(limited?.memoryLimit).toBe(1536 * 2 ** 20);
    expect(sidecar?.memoryLimit).toBeUndefined();
    expect(none?.memoryLimit).toBeUndefined();
  });
});
