import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pin } from '../build/ensure.ts';
import { type LayerEntry, writeOciArchive } from './oci-writer.ts';
import { ARCHIVE_SUFFIX } from './store.ts';

/**
 * The official etcd images (gcr.io/etcd-development/etcd, quay.io/coreos/etcd) as the node holds
 * them: OCI archives of etcd, etcdctl and etcdutl built from the release's Go modules at the
 * pinned versions (build-go.sh, etcd-images), laid out and configured as etcd's Dockerfile makes
 * the real image on distroless/static. Held images run from their own file system, so a pod spec
 * written for the real image finds /usr/local/bin/etcd, its WORKDIR and no shell, as it would
 * there. (The image table cannot give that: its containers see the machine's file system.)
 */

const REPOSITORIES = ['gcr.io/etcd-development/etcd', 'quay.io/coreos/etcd'] as const;

export const ETCD_PROGRAMS = ['etcd', 'etcdctl', 'etcdutl'] as const;

/** The versions the test bed holds: ETCD_VERSION (also the control plane's) and ETCD35_VERSION. */
export const heldEtcdVersions = (): string[] => [pin('ETCD'), pin('ETCD35')];

/** Where build-go.sh's build_etcd_image puts a version's programs. */
export const etcdProgramsDir = (cache: string, version: string): string =>
  join(cache, 'images', `etcd-${version}`);

/** The names one version is held under: the tag in both registries, and its minor (`v3.6`). */
export const etcdImageRefs = (version: string): string[] => {
  const minor = version.split('.').slice(0, 2).join('.');
  return REPOSITORIES.flatMap((repository) => [`${repository}:${version}`, `${repository}:${minor}`]);
};

/**
 * The real image's config: etcd's Dockerfile sets CMD and the last WORKDIR (/var/lib/etcd/, after
 * /var/etcd/) and exposes the client and peer ports; distroless/static (root) gives Env and User.
 */
export const ETCD_IMAGE_CONFIG = {
  Env: [
    'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt',
  ],
  Cmd: ['/usr/local/bin/etcd'],
  WorkingDir: '/var/lib/etcd',
  User: '0',
  ExposedPorts: { '2379/tcp': {}, '2380/tcp': {} },
} as const;

const NONROOT = 65532;
const PASSWD = [
  'root:x:0:0:root:/root:/sbin/nologin',
  'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin',
  `nonroot:x:${NONROOT}:${NONROOT}:nonroot:/home/nonroot:/sbin/nologin`,
];
const GROUP = ['root:x:0:', 'nobody:x:65534:', 'tty:x:5:', 'staff:x:50:', `nonroot:x:${NONROOT}:`];

const dir = (path: string, mode = 0o755, owner = 0): LayerEntry => ({
  path,
  type: 'dir',
  mode,
  uid: owner,
  gid: owner,
});
const text = (path: string, lines: readonly string[]): LayerEntry => ({
  path,
  type: 'file',
  mode: 0o644,
  data: `${lines.join('\n')}\n`,
});

/**
 * The image's one layer: distroless/static's users, homes, /tmp, name service order and CA
 * bundle (the machine's, from the same Debian package), then the Dockerfile's programs and
 * directories. Not distroless's Debian base files (os-release, tzdata, …): etcd reads none.
 */
export const etcdImageLayer = (programs: string, caBundle: string | undefined): LayerEntry[] => [
  dir('etc'),
  text('etc/passwd', PASSWD),
  text('etc/group', GROUP),
  // Go's resolver reads it: /etc/hosts before DNS, as in the real image.
  text('etc/nsswitch.conf', ['hosts: files dns']),
  ...(caBundle
    ? [
        dir('etc/ssl'),
        dir('etc/ssl/certs'),
        { path: 'etc/ssl/certs/ca-certificates.crt', type: 'file', mode: 0o644, source: caBundle } as const,
      ]
    : []),
  dir('home'),
  dir('home/nonroot', 0o700, NONROOT),
  dir('root', 0o700),
  dir('tmp', 0o1777),
  dir('usr'),
  dir('usr/local'),
  dir('usr/local/bin'),
  ...ETCD_PROGRAMS.map(
    (p): LayerEntry => ({ path: `usr/local/bin/${p}`, type: 'file', mode: 0o755, source: join(programs, p) }),
  ),
  dir('var'),
  dir('var/etcd'),
  dir('var/lib'),
  dir('var/lib/etcd'),
];

const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const archiveName = (version: string) => `etcd-${version}${ARCHIVE_SUFFIX}`;
const ARCHIVE_NAME = new RegExp(`^etcd-v[0-9][^/]*${ARCHIVE_SUFFIX.replaceAll('.', '\\.')}$`);

/**
 * Writes the archive of each held version into `dir` (where the node agent looks for held images)
 * unless one newer than its programs is there, and removes archives of versions no longer pinned.
 * The programs must have been built (ensureGoBinaries).
 */
export const ensureEtcdImages = async (
  cache: string,
  dir: string,
  log: (m: string) => void,
  versions: readonly string[] = heldEtcdVersions(),
): Promise<void> => {
  for (const version of versions) {
    const programs = etcdProgramsDir(cache, version);
    const paths = ETCD_PROGRAMS.map((p) => join(programs, p));
    const missing = paths.filter((p) => !existsSync(p));
    if (missing.length > 0)
      throw new Error(`etcd ${version}: ${missing.join(', ')} not built (build-go.sh <cache> etcd-images)`);
    const target = join(dir, archiveName(version));
    const built = Math.max(...(await Promise.all(paths.map(async (p) => (await stat(p)).mtimeMs))));
    const archived = await stat(target).then(
      (s) => s.mtimeMs,
      () => -1,
    );
    if (archived >= built) continue;
    await mkdir(dir, { recursive: true });
    const layer = etcdImageLayer(programs, existsSync(HOST_CA_BUNDLE) ? HOST_CA_BUNDLE : undefined);
    const { manifestDigest } = await writeOciArchive(target, {
      refs: etcdImageRefs(version),
      config: ETCD_IMAGE_CONFIG,
      entries: layer,
    });
    log(`[images] etcd ${version}: ${target} (${manifestDigest})`);
  }
  const keep = new Set(versions.map(archiveName));
  for (const name of await readdir(dir).catch(() => [] as string[]))
    if (ARCHIVE_NAME.test(name) && !keep.has(name)) {
      log(`[images] removing ${name} (no longer pinned)`);
      await rm(join(dir, name), { force: true });
    }
};
