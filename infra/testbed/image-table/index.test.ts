import { describe, expect, it } from 'vitest';
import { defaultImageTable, lookupImage } from './index.ts';

describe('image table', () => {
  const table = defaultImageTable('/cache');

  it('finds images by exact tag, patch tag and registry prefix', () => {
    expect(lookupImage(table, 'redis:7.0')?.programs['redis-server']).toBe('/usr/bin/redis-server');
    expect(lookupImage(table, 'redis:7.0.15')?.programs['redis-server']).toBe('/usr/bin/redis-server');
    expect(lookupImage(table, 'docker.io/library/redis:6.2')?.programs['redis-server']).toBe(
      '/cache/images/redis-6.2/redis-server',
    );
    expect(lookupImage(table, 'valkey/valkey:8.1.8')?.programs['valkey-server']).toBe(
      '/cache/images/valkey-8.1/valkey-server',
    );
    expect(lookupImage(table, 'busybox:1.36')?.config.cmd).toEqual(['sh']);
  });

  it("carries the official server images' config: CMD the server, WORKDIR /data", () => {
    for (const [image, server] of [
      ['redis:7.0', 'redis-server'],
      ['redis:6.2.14', 'redis-server'],
      ['valkey/valkey:8.1', 'valkey-server'],
    ] as const) {
      const entry = lookupImage(table, image);
      expect(entry?.config.workingDir, image).toBe('/data');
      expect(entry?.config.cmd, image).toEqual([server]);
      expect(entry?.config.env.find((e) => e.startsWith('PATH='))?.split(':')[0], image).toBe(
        'PATH=/tideway/bin',
      );
    }
    expect(lookupImage(table, 'busybox')?.config.workingDir).toBe('');
  });

  it('knows nothing of images it has no entry for', () => {
    expect(lookupImage(table, 'redis:5.0')).toBeUndefined();
    expect(lookupImage(table, 'nginx')).toBeUndefined();
  });
});
