import { describe, expect, it } from 'vitest';
import { parseReplication, serverVersion } from './info.ts';
import { chooseNewMaster } from './topology.ts';

const masterInfo = `# Server\r
redis_version:7.0.15\r
# Replication\r
role:master\r
connected_slaves:2\r
slave0:ip=10.244.0.3,port=6379,state=online,offset=1200,lag=0\r
slave1:ip=10.244.0.4,port=6379,state=wait_bgsave,offset=0,lag=1\r
master_replid:abc\r
master_repl_offset:1234\r
`;

const replicaInfo = `# Replication\r
role:slave\r
master_host:10.244.0.2\r
master_port:6379\r
master_link_status:up\r
master_sync_in_progress:0\r
slave_repl_offset:1200\r
master_replid:abc\r
`;

describe('INFO parsing', () => {
  it('reads a master and its replicas', () => {
    expect(parseReplication(masterInfo)).toEqual({
      role: 'master',
      offset: 1234,
      replid: 'abc',
      replicas: [
        { ip: '10.244.0.3', port: 6379, state: 'online', offset: 1200, lag: 0 },
        { ip: '10.244.0.4', port: 6379, state: 'wait_bgsave', offset: 0, lag: 1 },
      ],
    });
  });

  it('reads a replica', () => {
    expect(parseReplication(replicaInfo)).toEqual({
      role: 'replica',
      offset: 1200,
      masterHost: '10.244.0.2',
      masterPort: 6379,
      linkUp: true,
      syncInProgress: false,
      replid: 'abc',
      replid2: '',
      linkDownSeconds: 0,
    });
  });

  it('tells how long a replica has had its link down, and when it never had one', () => {
    const down = (since: string) =>
      parseReplication(
        `# Replication\r\nrole:slave\r\nmaster_link_status:down\r\nmaster_link_down_since_seconds:${since}\r\nmaster_replid2:def\r\n`,
      );
    expect(down('12')).toMatchObject({ linkUp: false, linkDownSeconds: 12, replid2: 'def' });
    // Redis 7: -1 for "never connected since start"; older servers: seconds since the epoch.
    expect(down('-1')).toMatchObject({ linkDownSeconds: Number.POSITIVE_INFINITY });
    expect(down('1795000000')).toMatchObject({ linkDownSeconds: Number.POSITIVE_INFINITY });
  });

  it('tells Redis from Valkey', () => {
    expect(serverVersion(masterInfo)).toEqual({ product: 'redis', version: '7.0.15' });
    expect(serverVersion('# Server\nredis_version:7.2.4\nvalkey_version:8.1.8\n')).toEqual({
      product: 'valkey',
      version: '8.1.8',
    });
  });
});

describe('chooseNewMaster', () => {
  it('promotes the reachable replica with the highest offset, ties to the lowest ordinal', () => {
    const pick = chooseNewMaster(
      [
        { pod: 'c-0', ordinal: 0, reachable: false, offset: 900 },
        { pod: 'c-1', ordinal: 1, reachable: true, offset: 800 },
        { pod: 'c-2', ordinal: 2, reachable: true, offset: 850 },
        { pod: 'c-3', ordinal: 3, reachable: true, offset: 850 },
        { pod: 'c-4', ordinal: 4, reachable: false, offset: 999 },
      ],
      'c-0',
    );
    expect(pick?.pod).toBe('c-2');
  });

  it('has no answer when no replica is reachable', () => {
    expect(chooseNewMaster([{ pod: 'c-1', ordinal: 1, reachable: false }], 'c-0')).toBeUndefined();
  });
});
