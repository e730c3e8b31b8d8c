import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directoryView, mountedView, RootPathError, resolveInRoot } from './root-path.ts';

const root = await mkdtemp(join(tmpdir(), 'tideway-rootpath-'));
const image = join(root, 'image');
const volume = join(root, 'volume');

describe('resolveInRoot', () => {
  beforeAll(async () => {
    await mkdir(join(image, 'usr/bin'), { recursive: true });
    await mkdir(join(image, 'run'), { recursive: true });
    await mkdir(join(image, 'var'), { recursive: true });
    await writeFile(join(image, 'file'), '');
    await symlink('/run', join(image, 'var/run')); // absolute, as in Debian
    await symlink('usr/bin', join(image, 'bin'));
    await symlink('../../../../..', join(image, 'up'));
    await symlink('/etc', join(image, 'hostetc'));
    await symlink('loop2', join(image, 'loop1'));
    await symlink('loop1', join(image, 'loop2'));
    await symlink('..data/key', join(image, 'last'));
    await mkdir(join(volume, 'real'), { recursive: true });
    await symlink('/', join(volume, 'escape'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  const view = directoryView(image);

  it('follows symlinks inside the root: absolute targets start at the root, `..` stops there', async () => {
    expect(await resolveInRoot(view, '/var/run/secrets/kubernetes.io')).toBe('/run/secrets/kubernetes.io');
    expect(await resolveInRoot(view, '/bin/node')).toBe('/usr/bin/node');
    expect(await resolveInRoot(view, '/up/etc/passwd')).toBe('/etc/passwd');
    expect(await resolveInRoot(view, '/hostetc/hosts')).toBe('/etc/hosts'); // the root's /etc, not the host's
    expect(await resolveInRoot(view, '/missing/../bin')).toBe('/usr/bin'); // a symlink after `..` too
    expect(await resolveInRoot(view, 'relative/./path/')).toBe('/relative/path');
  });

  it('leaves a final symlink alone when asked, and refuses loops and files on the way', async () => {
    expect(await resolveInRoot(view, '/last', false)).toBe('/last');
    expect(await resolveInRoot(view, '/last')).toBe('/..data/key');
    await expect(resolveInRoot(view, '/loop1/x')).rejects.toBeInstanceOf(RootPathError);
    await expect(resolveInRoot(view, '/file/x')).rejects.toThrow(/not a directory/);
  });

  it('looks paths up in the mount that covers them, a fresh file system showing nothing but its mount point', async () => {
    const mounted = mountedView([
      { path: '/', host: image },
      { path: '/dev', host: undefined },
      { path: '/data', host: volume },
    ]);
    expect(await resolveInRoot(mounted, '/data/real/x')).toBe('/data/real/x');
    expect(await resolveInRoot(mounted, '/data/escape/etc')).toBe('/etc'); // the volume's `/` link: the root's
    expect(await mounted.kind('/dev')).toBe('dir');
    expect(await mounted.kind('/dev/null')).toBeUndefined();
    expect(await resolveInRoot(mounted, '/var/run/x')).toBe('/run/x');
  });
});
