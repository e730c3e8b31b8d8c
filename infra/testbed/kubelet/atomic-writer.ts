import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** One file of a volume: its content and permission bits. */
export type FileProjection = { readonly data: Buffer; readonly mode: number };

/** A volume's files by path relative to the volume (a key, or an item's path such as `a/b`). */
export type Payload = ReadonlyMap<string, FileProjection>;

/** A payload path that would leave the volume or clash with the writer's own `..` names. */
export class PayloadPathError extends Error {
  override readonly name = 'PayloadPathError';
  readonly retry = false; // the same payload fails the same way
}

const DATA = '..data';
const DATA_TMP = '..data_tmp';

const topOf = (path: string): string => {
  const parts = path.split('/');
  if (path.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..') || path.startsWith('..'))
    throw new PayloadPathError(
      `volume path "${path}" must be relative, without "." or ".." elements, and not start with ".."`,
    );
  return parts[0] as string;
};

const errno = (error: unknown) => (error as NodeJS.ErrnoException).code;
const linkTarget = (path: string) =>
  readlink(path).catch((error: unknown) => {
    if (errno(error) === 'ENOENT' || errno(error) === 'EINVAL') return undefined; // missing, or not a link
    throw error;
  });

/** True when `stamp` holds exactly the payload (content and mode) and every visible name points into it. */
const upToDate = async (dir: string, stamp: string, payload: Payload, tops: ReadonlySet<string>) => {
  const files: string[] = [];
  for (const entry of await readdir(join(dir, stamp), { recursive: true })) {
    if ((await lstat(join(dir, stamp, entry))).isFile()) files.push(entry);
  }
  if (files.length !== payload.size) return false;
  for (const path of files) {
    const want = payload.get(path);
    const file = join(dir, stamp, path);
    if (!want || ((await lstat(file)).mode & 0o7777) !== want.mode) return false;
    if (!(await readFile(file)).equals(want.data)) return false;
  }
  const visible = (await readdir(dir)).filter((e) => !e.startsWith('..'));
  if (visible.length !== tops.size) return false;
  for (const top of tops) if ((await linkTarget(join(dir, top))) !== `${DATA}/${top}`) return false;
  return true;
};

const timestamp = () => new Date().toISOString().slice(0, 19).replace(/[-T:]/g, '_');

/**
 * Makes `dir` hold exactly `payload`, the way kubelet's AtomicWriter does, so that a process
 * reading the volume never sees a half-written file or a mix of two versions: the files go into a
 * new `..<timestamp>` directory, a `..data` symlink is switched to it by rename(2) (one atomic
 * step), and the visible names are symlinks through `..data` (`key` → `..data/key`). Then names
 * no longer in the payload and the previous directory are removed. `dir` itself is never
 * replaced, so a bind mount of it (the container's view) sees every change. Writes nothing when
 * the volume already holds the payload; returns whether it wrote. Not safe to run twice at once
 * on the same `dir`.
 */
export const writeAtomic = async (dir: string, payload: Payload): Promise<boolean> => {
  const tops = new Set([...payload.keys()].map(topOf));
  await mkdir(dir, { recursive: true });
  const old = await linkTarget(join(dir, DATA));
  if (old !== undefined && (await upToDate(dir, old, payload, tops).catch(() => false))) return false;

  const stampDir = await mkdtemp(join(dir, `..${timestamp()}.`));
  const stamp = basename(stampDir);
  await chmod(stampDir, 0o755); // mkdtemp makes it 0700: a non-root container user could not enter it
  for (const [path, file] of payload) {
    const target = join(stampDir, path);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    await writeFile(target, file.data, { mode: file.mode });
    await chmod(target, file.mode); // writeFile's mode is filtered by the umask
  }

  await rm(join(dir, DATA_TMP), { force: true });
  await symlink(stamp, join(dir, DATA_TMP));
  await rename(join(dir, DATA_TMP), join(dir, DATA));

  for (const top of tops) {
    const link = join(dir, top);
    if ((await linkTarget(link)) === `${DATA}/${top}`) continue;
    await rm(link, { recursive: true, force: true });
    await symlink(`${DATA}/${top}`, link);
  }
  // Names gone from the payload, the previous version, and leftovers of an interrupted write.
  for (const entry of await readdir(dir)) {
    const keep = entry.startsWith('..') ? entry === DATA || entry === stamp : tops.has(entry);
    if (!keep) await rm(join(dir, entry), { recursive: true, force: true });
  }
  return true;
};
