import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../api/generated.ts';
import {
  authConfSecretFor,
  configFor,
  configKeysInUse,
  configMapFor,
  renderedConfig,
  statefulSetFor,
  statefulSetReplicas,
} from './desired.ts';
import { QUORUM_LINES } from './redis-conf.ts';

describe('statefulSetReplicas', () => {
  it('follows spec.replicas up and down while the master serves inside the new size', () => {
    expect(statefulSetReplicas({ desired: 5, masterOrdinal: 0, masterLost: false, current: 3 })).toBe(5);
    expect(statefulSetReplicas({ desired: 2, masterOrdinal: 1, masterLost: false, current: 5 })).toBe(2);
  });

  it('keeps the master until it has handed over', () => {
    expect(statefulSetReplicas({ desired: 2, masterOrdinal: 3, masterLost: false, current: 5 })).toBe(4);
  });

  it('removes no instance while the master is lost: the one to promote may be among them', () => {
    expect(statefulSetReplicas({ desired: 1, masterOrdinal: 0, masterLost: true, current: 3 })).toBe(3);
    // Growing is still fine, and a new cluster has no StatefulSet yet.
    expect(statefulSetReplicas({ desired: 4, masterOrdinal: 0, masterLost: true, current: 3 })).toBe(4);
    expect(statefulSetReplicas({ desired: 3, masterOrdinal: -1, masterLost: true, current: undefined })).toBe(
      3,
    );
  });
});

describe('configuration by content', () => {
  const rc = (config: Record<string, string>) =>
    ({
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      metadata: { name: 'c', namespace: 'ns', uid: 'u' },
      spec: { replicas: 3, config },
    }) as RedisCluster;

  it('keeps every configuration a pod still reads, unchanged, next to the new one', () => {
    const before = configMapFor(rc({ 'maxmemory-policy': 'allkeys-lru' }));
    const oldKey = renderedConfig(rc({ 'maxmemory-policy': 'allkeys-lru' })).key;
    const sts = statefulSetFor(rc({ 'maxmemory-policy': 'allkeys-lru' }), oldKey);
    const inUse = configKeysInUse('c-config', [sts.spec?.template.spec]);
    expect([...inUse]).toEqual([oldKey]);
    const next = rc({ 'maxmemory-policy': 'noeviction' });
    const after = configMapFor(next, { existing: before.data ?? {}, inUse });
    const newKey = renderedConfig(next).key;
    expect(newKey).not.toBe(oldKey);
    expect(after.data?.[oldKey]).toBe(before.data?.[oldKey]);
    expect(after.data?.[newKey]).toContain('maxmemory-policy noeviction');
    // Nobody reads the old one any more: it goes.
    expect(
      Object.keys(configMapFor(next, { existing: after.data ?? {}, inUse: new Set() }).data ?? {}),
    ).toEqual([newKey]);
  });

  it('mounts only its own key, as redis.conf; a legacy pod that mounts the whole map keeps redis.conf', () => {
    const key = renderedConfig(rc({})).key;
    const volumes = statefulSetFor(rc({}), key).spec?.template.spec?.volumes;
    expect(volumes?.find((v) => v.name === 'config')?.configMap?.items).toEqual([
      { key, path: 'redis.conf' },
    ]);
    expect([
      ...configKeysInUse('c-config', [
        { containers: [], volumes: [{ name: 'config', configMap: { name: 'c-config' } }] },
      ]),
    ]).toEqual(['redis.conf']);
    expect([
      ...configKeysInUse('c-config', [
        { containers: [], volumes: [{ name: 'x', configMap: { name: 'other' } }] },
      ]),
    ]).toEqual([]);
  });

  it('names the key by the content: the same spec gives the same key', () => {
    expect(renderedConfig(rc({ a: '1' })).key).toBe(renderedConfig(rc({ a: '1' })).key);
    expect(renderedConfig(rc({ a: '1' })).key).not.toBe(renderedConfig(rc({ a: '2' })).key);
  });

  it('keeps no password in the configuration and only auth.conf in the pods', () => {
    const secret = authConfSecretFor(rc({}), { password: 'pw', previous: 'old' });
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(['auth.conf', 'password', 'previous']);
    const key = renderedConfig(rc({})).key;
    const auth = statefulSetFor(rc({}), key).spec?.template.spec?.volumes?.find((v) => v.name === 'auth');
    expect(auth?.secret?.items).toEqual([{ key: 'auth.conf', path: 'auth.conf' }]);
    expect(JSON.stringify(configMapFor(rc({})))).not.toContain('pw');
  });
});

describe('the write quorum and the configuration the pods read', () => {
  const rcOf = (spec: RedisCluster['spec']) =>
    ({
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      metadata: { name: 'c', namespace: 'ns', uid: 'u' },
      spec,
    }) as RedisCluster;

  it('is the same file for every size, every server starting with the safe quorum (set at run time after)', () => {
    const one = renderedConfig(rcOf({ replicas: 1 }));
    expect(renderedConfig(rcOf({ replicas: 3 }))).toEqual(one);
    expect(one.conf).toMatch(/^min-replicas-to-write 1$/m);
    expect(one.conf).toMatch(/^min-replicas-max-lag 10$/m);
  });

  it("writes the user's value instead, under the name the user gave", () => {
    const { conf } = renderedConfig(
      rcOf({ replicas: 3, config: { 'min-replicas-to-write': '0', 'min-slaves-max-lag': '30' } }),
    );
    expect(conf.match(/^min-(replicas|slaves)-to-write .*$/gm)).toEqual(['min-replicas-to-write 0']);
    expect(conf.match(/^min-(replicas|slaves)-max-lag .*$/gm)).toEqual(['min-slaves-max-lag 30']);
  });

  /** The configuration of a version before 2026-11-28: the quorum lines only with replicas. */
  const earlier = (conf: string, replicas: number) =>
    replicas > 1 ? conf : QUORUM_LINES.reduce((c, l) => c.replace(`${l}\n`, ''), conf);

  it('keeps the key pods mount when it differs only by the start-up quorum lines: an upgrade restarts nothing', () => {
    for (const replicas of [1, 3]) {
      const rc = rcOf({ replicas, config: { 'maxmemory-policy': 'allkeys-lru' } });
      const old = earlier(renderedConfig(rc).conf, replicas);
      const existing = { 'redis-old.conf': old };
      expect(configFor(rc, { existing, mounted: 'redis-old.conf' })).toEqual({
        conf: old,
        key: 'redis-old.conf',
      });
      const cm = configMapFor(rc, {
        existing,
        mounted: 'redis-old.conf',
        inUse: new Set(['redis-old.conf']),
      });
      expect(cm.data).toEqual({ 'redis-old.conf': old });
    }
    // One instance's file had no quorum lines: not the same text, kept all the same...
    const single = rcOf({ replicas: 1 });
    const old = earlier(renderedConfig(single).conf, 1);
    expect(old).not.toBe(renderedConfig(single).conf);
    const existing = { 'redis-old.conf': old };
    expect(configFor(single, { existing, mounted: 'redis-old.conf', replicas: 1 }).key).toBe(
      'redis-old.conf',
    );
    // ...until the StatefulSet has more: then every server must start with the safe quorum.
    const scaled = rcOf({ replicas: 3 });
    expect(configFor(scaled, { existing, mounted: 'redis-old.conf', replicas: 3 })).toEqual(
      renderedConfig(scaled),
    );
  });

  it("moves to the rendered key when anything else differs, or the lines are the user's", () => {
    const rc = rcOf({ replicas: 3, config: { 'maxmemory-policy': 'allkeys-lru' } });
    const rendered = renderedConfig(rc);
    const other = earlier(
      renderedConfig(rcOf({ replicas: 1, config: { 'maxmemory-policy': 'noeviction' } })).conf,
      1,
    );
    expect(configFor(rc, { existing: { old: other }, mounted: 'old' })).toEqual(rendered);
    // In the user's part, the same line is a setting of the user's: it is not dropped to match.
    const users = `${rendered.conf}min-replicas-to-write 1\n`;
    expect(configFor(rc, { existing: { old: users }, mounted: 'old' })).toEqual(rendered);
    expect(configFor(rc, { existing: {}, mounted: 'old' })).toEqual(rendered);
    expect(configFor(rc, { existing: { old: rendered.conf } })).toEqual(rendered);
  });
});
