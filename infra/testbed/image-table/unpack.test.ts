import { existsSync, lstatSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { OciArchive } from './archive.ts';
import { type FixtureEntry, ociArchiveOf, tarOf } from './fixtures.ts';
import { ImageArchiveError } from './image-config.ts';
import { readTar } from './tar.ts';
import { applyLayer, LayerError, unpackImage } from './unpack.ts';

const base = await mkdtemp(join(tmpdir(), 'tideway-unpack-'));
let n = 0;
const fresh = async () => {
  const dir = join(base, `case${n++}`);
  const root = join(dir, 'root');
  const outside = join(dir, 'outside');
  await mkdir(root, { recursive: true });
  await mkdir(outside, { recursive: true });
  await writeFile(join(outside, 'victim'), 'untouched');
  return { root, outside };
};
const apply = (root: string, entries: readonly FixtureEntry[]) =>
  applyLayer(root, readTar(Readable.from([tarOf(entries)])));
/** Every file below `dir`, relative. */
const tree = async (dir: string) => (await readdir(dir, { recursive: true })).sort();

afterAll(() => rm(base, { recursive: true, force: true }));

describe('applyLayer', () => {
  it('keeps contents, modes (set-id bits too), owners and symlinks as the layer has them', async () => {
    const { root } = await fresh();
    await apply(root, [
      { path: 'usr/bin/', type: 'dir', mode: 0o755 },
      { path: 'usr/bin/tool', data: '#!x', mode: 0o4755, uid: 0, gid: 0 },
      { path: 'home/app/', type: 'dir', mode: 0o700, uid: 65532, gid: 65532 },
      { path: 'home/app/data', data: 'd', mode: 0o600, uid: 65532, gid: 65532 },
      { path: 'bin', type: 'symlink', linkpath: 'usr/bin' },
      { path: 'usr/bin/same', type: 'hardlink', linkpath: 'usr/bin/tool' },
    ]);
    expect(statSync(join(root, 'usr/bin/tool')).mode & 0o7777).toBe(0o4755);
    expect(statSync(join(root, 'home/app'))).toMatchObject({ uid: 65532, gid: 65532 });
    expect(statSync(join(root, 'home/app')).mode & 0o7777).toBe(0o700);
    expect(readFileSync(join(root, 'home/app/data'), 'utf8')).toBe('d');
    expect(readlinkSync(join(root, 'bin'))).toBe('usr/bin');
    expect(statSync(join(root, 'usr/bin/same')).ino).toBe(statSync(join(root, 'usr/bin/tool')).ino);
  });

  it('follows symlinks of earlier layers as the container would (usrmerge: bin → usr/bin)', async () => {
    const { root } = await fresh();
    await apply(root, [
      { path: 'usr/bin/', type: 'dir' },
      { path: 'bin', type: 'symlink', linkpath: 'usr/bin' },
    ]);
    await apply(root, [{ path: 'bin/late', data: 'added later' }]);
    expect(readFileSync(join(root, 'usr/bin/late'), 'utf8')).toBe('added later');
    expect(lstatSync(join(root, 'bin')).isSymbolicLink()).toBe(true);
  });

  it('never writes outside the root through an absolute or climbing symlink, in this layer or an earlier one', async () => {
    const { root, outside } = await fresh();
    await apply(root, [
      { path: 'abs', type: 'symlink', linkpath: outside }, // absolute: means <root>/<outside> inside
      { path: 'up', type: 'symlink', linkpath: '../../../../../../..' },
      { path: 'abs/same-layer', data: 'pwned' },
    ]);
    await apply(root, [
      { path: 'abs/victim', data: 'pwned' },
      { path: 'up/escaped', data: 'pwned' },
    ]);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('untouched');
    expect(await readdir(outside)).toEqual(['victim']);
    expect(readFileSync(join(root, outside, 'victim'), 'utf8')).toBe('pwned');
    expect(readFileSync(join(root, outside, 'same-layer'), 'utf8')).toBe('pwned');
    expect(readFileSync(join(root, 'escaped'), 'utf8')).toBe('pwned'); // `..` stops at the root
  });

  it('replaces a symlink in the last component instead of writing through it', async () => {
    const { root, outside } = await fresh();
    await apply(root, [{ path: 'config', type: 'symlink', linkpath: join(outside, 'victim') }]);
    // A naive extraction (open with O_TRUNC) would overwrite the link's target.
    await apply(root, [{ path: 'config', data: 'mine' }]);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('untouched');
    expect(lstatSync(join(root, 'config')).isFile()).toBe(true);
  });

  it('refuses absolute member names, `..` members and hard links to what is not a file in the root', async () => {
    for (const entries of [
      [{ path: '/etc/passwd', data: 'x' }],
      [{ path: '../escape', data: 'x' }],
      [{ path: 'a/../../escape', data: 'x' }],
      [{ path: 'link', type: 'hardlink' as const, linkpath: '/etc/passwd' }],
      [{ path: 'link', type: 'hardlink' as const, linkpath: '../outside/victim' }],
      [{ path: 'link', type: 'hardlink' as const, linkpath: 'missing' }],
    ]) {
      const { root, outside } = await fresh();
      await expect(apply(root, entries), JSON.stringify(entries)).rejects.toBeInstanceOf(LayerError);
      expect(await tree(outside)).toEqual(['victim']);
      expect(existsSync(join(root, '..', 'escape'))).toBe(false);
    }
  });

  it('applies whiteouts to what earlier layers put there, not to what this layer adds', async () => {
    const { root } = await fresh();
    await apply(root, [
      { path: 'etc/old.conf', data: 'old' },
      { path: 'etc/keep.conf', data: 'keep' },
      { path: 'var/cache/a', data: 'a' },
      { path: 'var/cache/sub/b', data: 'b' },
    ]);
    await apply(root, [
      { path: 'etc/.wh.old.conf', data: '' },
      { path: 'var/cache/', type: 'dir' },
      { path: 'var/cache/fresh', data: 'new' },
      { path: 'var/cache/.wh..wh..opq', data: '' },
    ]);
    expect(await tree(join(root, 'etc'))).toEqual(['keep.conf']);
    expect(await tree(join(root, 'var/cache'))).toEqual(['fresh']);
  });
});

describe('unpackImage', () => {
  const archiveFile = async (bytes: Buffer) => {
    const file = join(base, `archive${n++}.oci.tar`);
    await writeFile(file, bytes);
    return file;
  };

  it('unpacks the layers in order, checking digests and diff_ids', async () => {
    const file = await archiveFile(
      ociArchiveOf([
        {
          ref: 'example/app:1',
          layers: [
            [
              { path: 'app/v', data: '1' },
              { path: 'app/gone', data: 'x' },
            ],
            [{ path: 'app/v', data: '2' }, { path: 'app/.wh.gone' }],
          ],
          config: { User: '10:20', WorkingDir: '/app', Entrypoint: ['run'], Env: ['A=b'] },
        },
      ]),
    );
    await using archive = await OciArchive.open(file);
    const [image] = await archive.images();
    expect(image?.ref).toBe('example/app:1');
    expect(image?.config).toEqual({
      entrypoint: ['run'],
      cmd: [],
      env: ['A=b'],
      workingDir: '/app',
      user: '10:20',
    });
    const root = join(base, `root${n++}`);
    await unpackImage(archive, image!, root);
    expect(await tree(join(root, 'app'))).toEqual(['v']);
    expect(readFileSync(join(root, 'app/v'), 'utf8')).toBe('2');
  });

  it('refuses a layer whose bytes do not match its digest', async () => {
    const file = await archiveFile(
      ociArchiveOf([{ ref: 'x:1', layers: [[{ path: 'f', data: 'x' }]], damage: true }]),
    );
    await using archive = await OciArchive.open(file);
    const [image] = await archive.images();
    await expect(unpackImage(archive, image!, join(base, `root${n++}`))).rejects.toThrow(ImageArchiveError);
  });

  it('says when a file is not an OCI archive', async () => {
    const file = await archiveFile(tarOf([{ path: 'manifest.json', data: '[]' }]));
    await expect(OciArchive.open(file)).rejects.toThrow(/not an OCI archive .*docker-archive/);
  });
});
