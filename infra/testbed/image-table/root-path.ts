import { lstat, readlink } from 'node:fs/promises';
import { join } from 'node:path';

/** A path that cannot be resolved inside a root (a symlink loop, a non-directory on the way). */
export class RootPathError extends Error {
  override readonly name = 'RootPathError';
  readonly retry = false;
}

export type NodeKind = 'dir' | 'file' | 'symlink' | 'other';

/** A container's file system as seen from the host, before the container runs. */
export type RootView = {
  /** What is at a container path; undefined when nothing is. */
  kind(path: string): Promise<NodeKind | undefined>;
  readlink(path: string): Promise<string>;
};

const kindOf = async (hostPath: string): Promise<NodeKind | undefined> => {
  const st = await lstat(hostPath).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return undefined;
    throw error;
  });
  if (!st) return undefined;
  return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
};

/** One layer of the view: container path → where it is on the host (undefined: a fresh, empty file system). */
export type ViewMount = { readonly path: string; readonly host: string | undefined };

/**
 * The file system a container will see once `mounts` are mounted in order (later ones on top):
 * a path is looked up in the deepest mount that covers it.
 */
export const mountedView = (mounts: readonly ViewMount[]): RootView => {
  const locate = (path: string) => {
    let best: ViewMount | undefined;
    for (const m of mounts) {
      const covers = m.path === '/' || path === m.path || path.startsWith(`${m.path}/`);
      if (covers && (!best || m.path.length >= best.path.length)) best = m;
    }
    if (!best) return { virtual: true as const, isMountPoint: false };
    if (best.host === undefined) return { virtual: true as const, isMountPoint: path === best.path };
    return {
      virtual: false as const,
      host: join(best.host, path.slice(best.path === '/' ? 0 : best.path.length)),
    };
  };
  return {
    kind: async (path) => {
      const at = locate(path);
      if (at.virtual) return at.isMountPoint ? 'dir' : undefined;
      return kindOf(at.host);
    },
    readlink: async (path) => {
      const at = locate(path);
      if (at.virtual) throw new RootPathError(`${path} is not a symlink`);
      return readlink(at.host);
    },
  };
};

/** The view of a plain directory used as a root (an unpacked image). */
export const directoryView = (root: string): RootView => mountedView([{ path: '/', host: root }]);

const MAX_LINKS = 40; // Linux's limit on symlinks followed in one lookup

/**
 * Where `path` leads inside a root, the way the kernel resolves it in a process whose root is
 * that directory: symlinks are followed (an absolute target starts again at the root, `..` stops
 * at the root), so the result never leaves it. Returns a normalized absolute container path whose
 * existing components are real directories (not symlinks); components that do not exist yet are
 * kept as written, for the caller to create. `followLast` false leaves a final symlink as is (to
 * replace or remove it, not what it points to).
 */
export const resolveInRoot = async (view: RootView, path: string, followLast = true): Promise<string> => {
  const rest = path.split('/').filter((p) => p !== '' && p !== '.');
  const done: string[] = [];
  let links = 0;
  while (rest.length > 0) {
    const part = rest.shift() as string;
    if (part === '..') {
      done.pop();
      continue;
    }
    const here = `/${[...done, part].join('/')}`;
    const kind = await view.kind(here);
    if (kind === 'symlink' && (followLast || rest.length > 0)) {
      if (++links > MAX_LINKS) throw new RootPathError(`${path}: too many levels of symbolic links`);
      const target = await view.readlink(here);
      if (target.startsWith('/')) done.length = 0;
      rest.unshift(...target.split('/').filter((p) => p !== '' && p !== '.'));
      continue;
    }
    if (kind !== undefined && kind !== 'dir' && rest.length > 0)
      throw new RootPathError(`${path}: ${here} is not a directory`);
    done.push(part);
  }
  return `/${done.join('/')}`;
};
