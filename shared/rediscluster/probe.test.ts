import { describe, expect, it } from 'vitest';
import { fromInfo } from './probe.ts';

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
