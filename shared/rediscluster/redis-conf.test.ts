import { describe, expect, it } from 'vitest';
import {
  ConfigRejected,
  configProblems,
  confValue,
  renderAuthConf,
  renderRedisConf,
  UNSAFE_DIRECTIVES,
  VALUE_RULES,
  validateConfig,
  writeQuorum,
} from './redis-conf.ts';

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

describe('what spec.config may hold', () => {
  it('refuses directives that would run code or reach the disk, naming them', () => {
    expect(configProblems({ loadmodule: '/x.so', 'Enable-Debug-Command': 'yes', maxmemory: '1gb' })).toEqual([
      expect.stringMatching(/config sets loadmodule, Enable-Debug-Command, which would let/),
    ]);
    for (const k of UNSAFE_DIRECTIVES) expect(configProblems({ [k]: 'yes' })).toHaveLength(1);
  });

  it('refuses a key that is no directive name', () => {
    expect(configProblems({ bad_key: '1', '-x': '1', 'maxmemory-policy': 'noeviction' })).toEqual([
      expect.stringMatching(/malformed entries: "bad_key", "-x"/),
    ]);
  });

  it('keeps restarted servers read-only: replica-read-only (and its alias) only yes', () => {
    expect(configProblems({ 'replica-read-only': 'YES' })).toEqual([]);
    expect(configProblems({ 'replica-read-only': 'no' })).toEqual([VALUE_RULES[0].message]);
    expect(configProblems({ 'Slave-Read-Only': 'no' })).toEqual([VALUE_RULES[0].message]);
  });

  it('bounds min-replicas-to-write by the replicas there are', () => {
    const toWrite = VALUE_RULES[1].message;
    expect(configProblems({ 'min-replicas-to-write': '2' }, 3)).toEqual([]);
    expect(configProblems({ 'min-replicas-to-write': '3' }, 3)).toEqual([toWrite]);
    expect(configProblems({ 'min-slaves-to-write': '1' }, 1)).toEqual([toWrite]);
    expect(configProblems({ 'min-replicas-to-write': '0' }, 1)).toEqual([]);
    for (const bad of ['-1', '1.5', 'two', '', ' 1', '9999999999'])
      expect(configProblems({ 'min-replicas-to-write': bad }, 9)).toEqual([toWrite]);
    // Without the replica count only the form is checked.
    expect(configProblems({ 'min-replicas-to-write': '5' })).toEqual([]);
  });

  it('wants min-replicas-max-lag as whole seconds, at least 1', () => {
    expect(configProblems({ 'min-replicas-max-lag': '1' })).toEqual([]);
    for (const bad of ['0', '10s', '-5'])
      expect(configProblems({ 'min-slaves-max-lag': bad })).toEqual([VALUE_RULES[2].message]);
  });

  it('rejects through renderRedisConf and validateConfig with reason InvalidConfig, not to be retried', () => {
    const error = (() => {
      try {
        renderRedisConf({ 'min-replicas-to-write': '3' }, { ...o, replicas: 3 });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigRejected);
    expect(error).toMatchObject({ reason: 'InvalidConfig', retry: false });
    expect(() => validateConfig({ loadmodule: 'x' })).toThrow(ConfigRejected);
    expect(() => validateConfig({ maxmemory: '1gb' }, 3)).not.toThrow();
  });
});

describe('write quorum', () => {
  it('with replicas, the master needs one replica in touch within 10 s; a single instance none', () => {
    expect(writeQuorum({}, 3)).toEqual({ toWrite: 1, maxLag: 10 });
    expect(writeQuorum({}, 2)).toEqual({ toWrite: 1, maxLag: 10 });
    expect(writeQuorum({}, 1)).toEqual({ toWrite: 0, maxLag: 10 });
  });

  it("takes the user's value under either name and in any case", () => {
    expect(writeQuorum({ 'min-slaves-to-write': '0' }, 3)).toEqual({ toWrite: 0, maxLag: 10 });
    expect(writeQuorum({ 'MIN-REPLICAS-TO-WRITE': '2', 'min-slaves-max-lag': '30' }, 3)).toEqual({
      toWrite: 2,
      maxLag: 30,
    });
  });

  it('with both names set, takes the one redis.conf has last, as Redis does', () => {
    const both = { 'min-replicas-to-write': '0', 'min-slaves-to-write': '1' };
    expect(writeQuorum(both, 3).toWrite).toBe(1);
    const conf = renderRedisConf(both, { ...o, replicas: 3 });
    expect(conf.match(/^min-(replicas|slaves)-to-write .*$/gm)?.at(-1)).toBe('min-slaves-to-write 1');
  });

  it('starts every server with the safe quorum, whatever the size, unless the user sets it', () => {
    const three = renderRedisConf({}, { ...o, replicas: 3 });
    expect(three).toContain('repl-diskless-sync-delay 1\nmin-replicas-to-write 1\nmin-replicas-max-lag 10\n');
    expect(renderRedisConf({}, { ...o, replicas: 1 })).toBe(three);
    const users = renderRedisConf({ 'min-slaves-to-write': '0' }, { ...o, replicas: 2 });
    expect(users.match(/^min-(replicas|slaves)-to-write .*$/gm)).toEqual(['min-slaves-to-write 0']);
    expect(users).toContain('min-replicas-max-lag 10\n');
  });
});
