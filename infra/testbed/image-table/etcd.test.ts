import { lstatSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pin } from '../build/ensure.ts';
import { OciArchive } from './archive.ts';
import {
  ETCD_IMAGE_CONFIG,
  ETCD_PROGRAMS,
  ensureEtcdImages,
  etcdImageRefs,
  etcdProgramsDir,
  heldEtcdVersions,
} from './etcd.ts';
import { ETCD_DEFAULT_IMAGE, ETCD_IMAGES } from './etcd-images.ts';
import { imageConfigOf } from './image-config.ts';
import { openImageStore } from './store.ts';
import { unpackImage } from './unpack.ts';

const base = await mkdtemp(join(tmpdir(), 'tideway-etcd-images-'));

describe('the etcd images', () => {
  afterAll(() => rm(base, { recursive: true, force: true }));

  it('are the versions pins.sh builds, and EtcdCluster defaults to the newer', () => {
    expect(ETCD_IMAGES).toEqual({
      '3.5': `gcr.io/etcd-development/etcd:${pin('ETCD35')}`,
      '3.6': `gcr.io/etcd-development/etcd:${pin('ETCD')}`,
    });
    expect(pin('ETCD35')).toMatch(/^v3\.5\.\d+$/);
    expect(pin('ETCD')).toMatch(/^v3\.6\.\d+$/);
    expect(ETCD_DEFAULT_IMAGE).toBe(ETCD_IMAGES['3.6']);
    const held = heldEtcdVersions().flatMap(etcdImageRefs);
    for (const image of Object.values(ETCD_IMAGES)) expect(held).toContain(image);
  });

  it('are held under their tag and its minor, in both registries etcd publishes to', () => {
    expect(etcdImageRefs('v3.6.16')).toEqual([
      'gcr.io/etcd-development/etcd:v3.6.16',
      'gcr.io/etcd-development/etcd:v3.6',
      'quay.io/coreos/etcd:v3.6.16',
      'quay.io/coreos/etcd:v3.6',
    ]);
  });

  it("carry the official image's config: CMD /usr/local/bin/etcd, WORKDIR /var/lib/etcd, root, no ENTRYPOINT", () => {
    const config = imageConfigOf({
      architecture: 'amd64',
      os: 'linux',
      config: { ...ETCD_IMAGE_CONFIG, Env: [...ETCD_IMAGE_CONFIG.Env], Cmd: [...ETCD_IMAGE_CONFIG.Cmd] },
      rootfs: { type: 'layers', diff_ids: [] },
    });
    expect(config).toEqual({
      entrypoint: [],
      cmd: ['/usr/local/bin/etcd'],
      env: [
        'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt',
      ],
      workingDir: '/var/lib/etcd',
      user: '0',
    });
    expect(Object.keys(ETCD_IMAGE_CONFIG.ExposedPorts)).toEqual(['2379/tcp', '2380/tcp']);
  });

  describe('ensureEtcdImages', () => {
    const cache = join(base, 'cache');
    const held = join(base, 'held');
    const version = 'v3.6.16';

    const fakePrograms = async (v: string) => {
      const dir = etcdProgramsDir(cache, v);
      await mkdir(dir, { recursive: true });
      // The packaging is under test here, not etcd: each "program" is a few distinct bytes.
      for (const p of ETCD_PROGRAMS) await writeFile(join(dir, p), `#!${p} ${v}\n`, { mode: 0o755 });
    };

    it('refuses to archive programs that were not built', async () => {
      await expect(ensureEtcdImages(cache, held, () => undefined, ['v3.5.0'])).rejects.toThrow(
        /etcd v3\.5\.0: .*etcd.* not built/,
      );
    });

    it('writes an archive the node holds under every name, laid out as the real image', async () => {
      await fakePrograms(version);
      const log: string[] = [];
      await ensureEtcdImages(cache, held, (m) => log.push(m), [version]);
      expect(await readdir(held)).toEqual([`etcd-${version}.oci.tar`]);
      expect(log.join('\n')).toContain(`etcd ${version}`);

      const store = openImageStore({ dirs: [held], cache: join(base, 'unpacked') });
      for (const name of [
        'gcr.io/etcd-development/etcd:v3.6.16',
        'gcr.io/etcd-development/etcd:v3.6',
        'quay.io/coreos/etcd:v3.6.16',
      ])
        expect((await store.find(name))?.config.cmd, name).toEqual(['/usr/local/bin/etcd']);
      // A patch it was not built from is not silently another version.
      expect(await store.find('gcr.io/etcd-development/etcd:v3.6.15')).toBeUndefined();

      const archivePath = join(held, `etcd-${version}.oci.tar`);
      await using archive = await OciArchive.open(archivePath);
      const [image] = await archive.images();
      if (!image) throw new Error('no image');
      const root = join(base, 'root');
      await unpackImage(archive, image, root);
      for (const p of ETCD_PROGRAMS) {
        const st = lstatSync(join(root, 'usr/local/bin', p));
        expect(st.mode & 0o7777, p).toBe(0o755);
        expect(readFileSync(join(root, 'usr/local/bin', p), 'utf8')).toBe(`#!${p} ${version}\n`);
      }
      for (const d of ['var/etcd', 'var/lib/etcd'])
        expect(lstatSync(join(root, d)).isDirectory(), d).toBe(true);
      expect(lstatSync(join(root, 'tmp')).mode & 0o7777).toBe(0o1777);
      expect(readFileSync(join(root, 'etc/passwd'), 'utf8')).toMatch(/^root:x:0:0:root:\/root:/);
      // distroless: no shell.
      expect(() => lstatSync(join(root, 'bin/sh'))).toThrow();
    });

    it('keeps an archive newer than its programs, writes it again (the same bytes) when they change', async () => {
      const archivePath = join(held, `etcd-${version}.oci.tar`);
      const before = (await stat(archivePath)).mtimeMs;
      await ensureEtcdImages(cache, held, () => undefined, [version]);
      expect((await stat(archivePath)).mtimeMs).toBe(before);

      const content = readFileSync(archivePath);
      const later = new Date(Date.now() + 60_000);
      await utimes(join(etcdProgramsDir(cache, version), 'etcdctl'), later, later);
      await ensureEtcdImages(cache, held, () => undefined, [version]);
      expect((await stat(archivePath)).mtimeMs).toBeGreaterThan(before);
      expect(readFileSync(archivePath).equals(content)).toBe(true);
    });

    it('removes the archive of a version no longer pinned, not archives it did not write', async () => {
      await writeFile(join(held, 'etcd-v3.4.0.oci.tar'), 'old');
      await writeFile(join(held, '0123456789abcdef.oci.tar'), 'loaded by someone');
      await ensureEtcdImages(cache, held, () => undefined, [version]);
      expect((await readdir(held)).sort()).toEqual(['0123456789abcdef.oci.tar', `etcd-${version}.oci.tar`]);
    });
  });
});
