import { describe, expect, it } from 'vitest';
import { ConfigRejected, confValue, renderAuthConf, renderRedisConf } from './redis-conf.ts';

const o = { authInclude: '/etc/tideway/auth/auth.conf', dataDir: '/data' };

describe('redis.conf', () => {
  it("puts Tideway's directives first and the user's after, sorted, as written", () => {
    const conf = renderRedisConf(
      { 'maxmemory-policy': 'allkeys-lru', save: '900 1 300 10', appendonly: 'yes' },
      o,
    );
    expect(conf).toContain('port 6379\n');
    expect(conf).toContain('include /etc/tideway/auth/auth.conf\n');
    expect(conf.indexOf('appendonly yes')).toBeLessThan(conf.indexOf('maxmemory-policy allkeys-lru'));
    expect(conf).toContain('save 900 1 300 10\n');
    expect(conf).not.toMatch(/requirepass/);
    expect(conf).toContain('replicaof 127.0.0.1 1\n'); // fenced until Tideway assigns a role
  });

  it('refuses owned directives whatever their case, naming them', () => {
    expect(() => renderRedisConf({ Port: '1', requirepass: 'x', maxmemory: '1gb' }, o)).toThrow(
      ConfigRejected,
    );
    expect(() => renderRedisConf({ Port: '1', requirepass: 'x' }, o)).toThrow(/Port, requirepass/);
  });

  it('refuses a value that would smuggle in another line', () => {
    expect(() => renderRedisConf({ maxmemory: '1gb\nreplicaof 10.0.0.1 6379' }, o)).toThrow(/malformed/);
  });

  it('quotes passwords so any character survives', () => {
    expect(confValue('s3cret')).toBe('s3cret');
    expect(confValue('a b"c\\d')).toBe('"a b\\"c\\\\d"');
    expect(renderAuthConf('p w')).toBe('requirepass "p w"\nmasterauth "p w"\n');
  });
});
