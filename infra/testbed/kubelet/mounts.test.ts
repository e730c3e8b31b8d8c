import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ContainerConfigError } from './env.ts';
import { volumeMounts } from './mounts.ts';

const dir = await mkdtemp(join(tmpdir(), 'tideway-mounts-'));
const shared = join(dir, 'shared');
const config = join(dir, 'config');
const volumes = new Map([
  ['shared', { path: shared, readOnly: false }],
  ['config', { path: config, readOnly: true }],
]);
const mounts = (volumeMount: Record<string, unknown>, env = {}) =>
  volumeMounts(
    { name: 'c', volumeMounts: [{ name: 'shared', mountPath: '/m', ...volumeMount }] },
    volumes,
    env,
  );

describe('volumeMounts', () => {
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('binds a volume, or a subPath of it resolved inside it (made when missing in a writable volume)', async () => {
    await mkdir(join(config, '..2020_01_01.x'), { recursive: true });
    await writeFile(join(config, '..2020_01_01.x', 'key'), 'v');
    await symlink('..2020_01_01.x', join(config, '..data'));
    await symlink('..data/key', join(config, 'key'));
    expect(await mounts({})).toEqual([{ source: shared, containerPath: '/m', readOnly: false }]);
    expect(await mounts({ subPathExpr: 'pods/$(POD)' }, { POD: 'p-0' })).toEqual([
      { source: join(shared, 'pods/p-0'), containerPath: '/m', readOnly: false },
    ]);
    expect(existsSync(join(shared, 'pods/p-0'))).toBe(true);
    expect(await mounts({ name: 'config', subPath: 'key' })).toEqual([
      { source: join(config, '..2020_01_01.x', 'key'), containerPath: '/m', readOnly: true },
    ]);
  });

  it('keeps a symlink another container put in a shared volume from pointing a subPath outside it', async () => {
    await symlink('/etc', join(shared, 'escape'));
    expect(await mounts({ subPath: 'escape/passwd' })).toEqual([
      { source: join(shared, 'etc/passwd'), containerPath: '/m', readOnly: false },
    ]);
    await expect(mounts({ subPath: '../config' })).rejects.toBeInstanceOf(ContainerConfigError);
    await expect(mounts({ subPath: '/etc' })).rejects.toBeInstanceOf(ContainerConfigError);
    await expect(mounts({ name: 'nope' })).rejects.toThrow(/names no volume/);
  });
});
