import { describe, expect, it } from 'vitest';
import { ContainerConfigError } from './env.ts';
import { configMapPayload, downwardApiPayload, secretPayload } from './payload.ts';

const text = (p: ReadonlyMap<string, { data: Buffer; mode: number }>) =>
  Object.fromEntries([...p].map(([k, f]) => [k, [f.data.toString(), f.mode.toString(8)]]));

describe('volume payloads', () => {
  const cm = {
    data: { 'redis.conf': 'port 6379', other: 'x' },
    binaryData: { bin: Buffer.from('b').toString('base64') },
  };

  it('projects every key of a ConfigMap with the default mode, binaryData included', () => {
    expect(text(configMapPayload('config', { name: 'c' }, cm))).toEqual({
      'redis.conf': ['port 6379', '644'],
      other: ['x', '644'],
      bin: ['b', '644'],
    });
    expect(text(configMapPayload('config', { name: 'c', defaultMode: 0o440 }, cm)).other).toEqual([
      'x',
      '440',
    ]);
  });

  it('projects only the listed items, each at its path with its own mode or the default', () => {
    const items = [
      { key: 'redis.conf', path: 'conf/redis.conf', mode: 0o400 },
      { key: 'other', path: 'o' },
    ];
    expect(text(configMapPayload('config', { name: 'c', items, defaultMode: 0o600 }, cm))).toEqual({
      'conf/redis.conf': ['port 6379', '400'],
      o: ['x', '600'],
    });
  });

  it('fails on a missing object or item key unless the volume is optional, like kubelet', () => {
    expect(() => configMapPayload('config', { name: 'c' }, undefined)).toThrow(ContainerConfigError);
    expect(() => configMapPayload('config', { name: 'c' }, undefined)).toThrow(
      'configmap "c" (volume config) not found',
    );
    expect(configMapPayload('config', { name: 'c', optional: true }, undefined).size).toBe(0);
    const items = [
      { key: 'nope', path: 'n' },
      { key: 'other', path: 'o' },
    ];
    expect(() => configMapPayload('config', { name: 'c', items }, cm)).toThrow('has no key "nope"');
    expect([...configMapPayload('config', { name: 'c', items, optional: true }, cm).keys()]).toEqual(['o']);
    expect(() => secretPayload('auth', { secretName: 's' }, undefined)).toThrow(
      'secret "s" (volume auth) not found',
    );
    expect(secretPayload('auth', { secretName: 's', optional: true }, undefined).size).toBe(0);
  });

  it('decodes Secret data and applies its defaultMode', () => {
    const secret = { data: { 'auth.conf': Buffer.from('requirepass pw').toString('base64') } };
    expect(text(secretPayload('auth', { secretName: 's', defaultMode: 0o400 }, secret))).toEqual({
      'auth.conf': ['requirepass pw', '400'],
    });
  });

  it('writes the pod\'s labels and annotations as kubelet does: sorted key="value" lines', () => {
    const pod = {
      metadata: { name: 'p', labels: { zone: 'b', app: 'redis' }, annotations: { 'x/y': 'a "q"' } },
    };
    const source = {
      items: [
        { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
        { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' }, mode: 0o400 },
        { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
      ],
    };
    expect(text(downwardApiPayload(source, pod))).toEqual({
      labels: ['app="redis"\nzone="b"', '644'],
      annotations: ['x/y="a \\"q\\""', '400'],
      name: ['p', '644'],
    });
    expect(() =>
      downwardApiPayload({ items: [{ path: 'ip', fieldRef: { fieldPath: 'status.podIP' } }] }, pod),
    ).toThrow(ContainerConfigError);
  });
});
