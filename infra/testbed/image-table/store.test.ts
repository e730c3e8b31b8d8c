import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ociArchiveOf } from './fixtures.ts';
import { ImageArchiveError } from './image-config.ts';
import { loadImageArchive } from './load.ts';
import { normalizeRef, openImageStore, refMatches } from './store.ts';

const base = await mkdtemp(join(tmpdir(), 'tideway-store-'));

describe('image references', () => {
  it('normalizes Docker Hub names and a missing tag', () => {
    expect(normalizeRef('redis')).toBe('redis:latest');
    expect(normalizeRef('docker.io/library/redis:7.0')).toBe('redis:7.0');
    expect(normalizeRef('localhost:5000/app')).toBe('localhost:5000/app:latest');
    expect(normalizeRef('localhost/tideway:1a2b')).toBe('localhost/tideway:1a2b');
  });

  it('matches by name and tag, or by manifest digest with the name', () => {
    const held = { ref: 'localhost/tideway:1a2b', manifestDigest: `sha256:${'a'.repeat(64)}` };
    expect(refMatches('localhost/tideway:1a2b', held)).toBe(true);
    expect(refMatches('localhost/tideway:ffff', held)).toBe(false);
    expect(refMatches('tideway:1a2b', held)).toBe(false);
    expect(refMatches(`localhost/tideway@sha256:${'a'.repeat(64)}`, held)).toBe(true);
    expect(refMatches(`localhost/tideway:1a2b@sha256:${'a'.repeat(64)}`, held)).toBe(true);
    expect(refMatches(`localhost/other@sha256:${'a'.repeat(64)}`, held)).toBe(false);
    expect(refMatches(`localhost/tideway@sha256:${'b'.repeat(64)}`, held)).toBe(false);
  });
});

describe('openImageStore', () => {
  afterAll(() => rm(base, { recursive: true, force: true }));

  it('holds what is dropped into its directories, the newest archive winning a name, and unpacks each image once', async () => {
    const dir = join(base, 'archives');
    const cache = join(base, 'unpacked');
    await mkdir(dir, { recursive: true });
    const store = openImageStore({ dirs: [dir, join(base, 'missing')], cache });
    expect(await store.find('example/app:1')).toBeUndefined();

    await writeFile(
      join(dir, 'old.oci.tar'),
      ociArchiveOf([{ ref: 'example/app:1', layers: [[{ path: 'v', data: 'old' }]] }]),
    );
    await utimes(join(dir, 'old.oci.tar'), 1_000_000, 1_000_000);
    await writeFile(join(dir, 'broken.oci.tar'), 'not a tar');
    await writeFile(join(dir, 'ignored.tar'), 'other suffix');
    const old = await store.find('example/app:1');
    expect(old?.archive).toBe(join(dir, 'old.oci.tar'));

    await writeFile(
      join(dir, 'new.oci.tar'),
      ociArchiveOf([
        { ref: 'example/app:1', layers: [[{ path: 'v', data: 'new' }]], config: { WorkingDir: '/srv' } },
        { ref: 'example/tool:2', layers: [[{ path: 'tool', data: 't' }]] },
      ]),
    );
    const held = await store.find('example/app:1');
    expect(held).toMatchObject({ archive: join(dir, 'new.oci.tar'), config: { workingDir: '/srv' } });
    expect((await store.refs()).sort()).toEqual(['example/app:1', 'example/tool:2']);

    const [a, b] = await Promise.all([store.rootfs(held!), store.rootfs(held!)]);
    expect(a).toBe(b);
    expect(readFileSync(join(a, 'v'), 'utf8')).toBe('new');
    expect(await store.rootfs(held!)).toBe(a); // no second unpack: the same root

    // An unpacked image no archive holds any more goes at the next unpack; one in use stays.
    await mkdir(join(cache, 'f'.repeat(64), 'rootfs'), { recursive: true });
    await rm(join(dir, 'old.oci.tar'));
    const tool = await store.find('example/tool:2');
    await store.rootfs(tool!);
    expect(existsSync(join(cache, 'f'.repeat(64)))).toBe(false);
    expect(existsSync(a)).toBe(true);
    expect((await readdir(cache)).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('reports an image that cannot be unpacked, and unpacks nothing of it', async () => {
    const dir = join(base, 'bad');
    const cache = join(base, 'bad-unpacked');
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'evil.oci.tar'),
      ociArchiveOf([
        {
          ref: 'evil:1',
          layers: [
            [
              { path: 'ok', data: 'x' },
              { path: '../escape', data: 'x' },
            ],
          ],
        },
      ]),
    );
    const store = openImageStore({ dirs: [dir], cache });
    const held = await store.find('evil:1');
    await expect(store.rootfs(held!)).rejects.toThrow(/\.\.\/escape.*leaves the root/);
    await expect(store.rootfs(held!)).rejects.toBeInstanceOf(ImageArchiveError);
    expect(await readdir(cache)).toEqual([]);
  });

  it('loads an archive into a directory like `kind load image-archive`, refusing an unnamed image', async () => {
    const source = join(base, 'source.oci.tar');
    await writeFile(
      source,
      ociArchiveOf([{ ref: 'example/loaded:3', layers: [[{ path: 'x', data: 'y' }]] }]),
    );
    const into = join(base, 'loaded');
    expect(await loadImageArchive(source, into)).toEqual(['example/loaded:3']);
    expect(
      await openImageStore({ dirs: [into], cache: join(base, 'c') }).find('example/loaded:3'),
    ).toBeDefined();

    await writeFile(source, ociArchiveOf([{ layers: [[{ path: 'x', data: 'y' }]] }]));
    await expect(loadImageArchive(source, join(base, 'loaded2'))).rejects.toThrow(/has no name/);
    expect(existsSync(join(base, 'loaded2'))).toBe(false);
  });
});
