import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OciArchive } from './archive.ts';
import { type ImageSpec, writeOciArchive } from './oci-writer.ts';
import { unpackImage } from './unpack.ts';

const base = await mkdtemp(join(tmpdir(), 'tideway-oci-writer-'));
const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('writeOciArchive', () => {
  afterAll(() => rm(base, { recursive: true, force: true }));

  const source = join(base, 'program');
  const spec: ImageSpec = {
    refs: ['example.org/app:v1.2.3', 'example.org/app:v1.2'],
    config: { Cmd: ['/usr/local/bin/app'], WorkingDir: '/srv', User: '0', Env: ['PATH=/usr/local/bin'] },
    entries: [
      { path: 'usr', type: 'dir', mode: 0o755 },
      { path: 'usr/local', type: 'dir', mode: 0o755 },
      { path: 'usr/local/bin', type: 'dir', mode: 0o755 },
      { path: 'usr/local/bin/app', type: 'file', mode: 0o755, source },
      { path: 'usr/local/bin/alias', type: 'symlink', mode: 0o777, target: 'app' },
      { path: 'etc', type: 'dir', mode: 0o755 },
      { path: 'etc/motd', type: 'file', mode: 0o644, data: 'hello\n' },
      { path: 'tmp', type: 'dir', mode: 0o1777 },
      { path: 'home', type: 'dir', mode: 0o755 },
      { path: 'home/nonroot', type: 'dir', mode: 0o700, uid: 65532, gid: 65532 },
    ],
  };

  it('holds one image under every name, which the node unpacks as written', async () => {
    // Not a multiple of the tar block, so the padding is exercised.
    await writeFile(source, Buffer.alloc(70_001, 7), { mode: 0o755 });
    const target = join(base, 'app.oci.tar');
    const { manifestDigest } = await writeOciArchive(target, spec);

    await using archive = await OciArchive.open(target);
    const images = await archive.images();
    expect(images.map((i) => i.ref)).toEqual(spec.refs);
    expect(new Set(images.map((i) => i.manifestDigest))).toEqual(new Set([manifestDigest]));
    const image = images[0];
    if (!image) throw new Error('no image');
    expect(image.config).toEqual({
      entrypoint: [],
      cmd: ['/usr/local/bin/app'],
      env: ['PATH=/usr/local/bin'],
      workingDir: '/srv',
      user: '0',
    });
    expect(image.platform.os).toBe('linux');

    const root = join(base, 'root');
    await unpackImage(archive, image, root);
    const app = lstatSync(join(root, 'usr/local/bin/app'));
    expect(app.mode & 0o7777).toBe(0o755);
    expect(sha(join(root, 'usr/local/bin/app'))).toBe(sha(source));
    expect(readlinkSync(join(root, 'usr/local/bin/alias'))).toBe('app');
    expect(readFileSync(join(root, 'etc/motd'), 'utf8')).toBe('hello\n');
    expect(lstatSync(join(root, 'tmp')).mode & 0o7777).toBe(0o1777);
    const home = lstatSync(join(root, 'home/nonroot'));
    expect([home.uid, home.gid, home.mode & 0o7777]).toEqual([65532, 65532, 0o700]);
  });

  it('writes the same bytes for the same inputs, and leaves no temporary file', async () => {
    const a = join(base, 'a.oci.tar');
    const b = join(base, 'b.oci.tar');
    await writeOciArchive(a, spec);
    await writeOciArchive(b, spec);
    expect(sha(a)).toBe(sha(b));
    expect((await readdir(base)).filter((n) => n.includes('.partial') || n.includes('.layer'))).toEqual([]);
  });

  it('refuses a name tar would have to split, and leaves nothing behind', async () => {
    const target = join(base, 'long.oci.tar');
    await expect(
      writeOciArchive(target, {
        ...spec,
        entries: [{ path: `${'x'.repeat(101)}`, type: 'dir', mode: 0o755 }],
      }),
    ).rejects.toThrow(/over 100 bytes/);
    expect(() => lstatSync(target)).toThrow();
  });
});
