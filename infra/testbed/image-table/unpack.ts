import { createHash, type Hash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  lchownSync,
  linkSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { ArchivedImage, OciArchive } from './archive.ts';
import { ImageArchiveError, LAYER_MEDIA_TYPES } from './image-config.ts';
import { directoryView, resolveInRoot } from './root-path.ts';
import { readTar, type TarEntry, type TarMember } from './tar.ts';

/** A layer member that would write outside the root, or that cannot be applied. */
export class LayerError extends Error {
  override readonly name = 'LayerError';
  readonly retry = false;
}

const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';

/** A member's path as container path parts; absolute paths and `..` are refused, not cleaned. */
const partsOf = (path: string): string[] => {
  if (path.startsWith('/')) throw new LayerError(`layer member ${path}: absolute path`);
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new LayerError(`layer member ${path}: ".." leaves the root`);
  return parts;
};

const exists = (p: string) => lstatSync(p, { throwIfNoEntry: false });

export type ApplyStats = { entries: number; skippedDevices: number };

/**
 * Applies one layer (a tar stream) to `root` the way a container runtime does, without trusting
 * it: every path is resolved inside the root (a symlink, from this layer or an earlier one, is
 * followed as the container would follow it, so an absolute or `..` target stays in the root),
 * the last component is replaced, never followed. Whiteouts (`.wh.<name>`, `.wh..wh..opq`) remove
 * what earlier layers put there. Owners, modes and times are kept; device nodes and FIFOs are
 * skipped (a container gets its own /dev). File operations are synchronous: through the thread
 * pool, each of a file's five calls cost a round trip and unpacking took ten times as long as
 * tar; run it in a process of its own (see store.ts).
 */
export const applyLayer = async (root: string, members: AsyncIterable<TarMember>): Promise<ApplyStats> => {
  const view = directoryView(root);
  const created = new Set<string>(); // container paths this layer made, which its whiteouts keep
  // Parent directories already resolved and made, by their path as written in the layer.
  const dirs = new Map<string, string>();
  /** Removes a path; what was resolved through it may now lead elsewhere. */
  const remove = (p: string) => {
    dirs.clear();
    rmSync(p, { recursive: true, force: true });
  };
  const fail = (entry: TarEntry, error: unknown): never => {
    if (error instanceof LayerError) throw error;
    throw new LayerError(`layer member ${entry.path}: ${(error as Error).message}`, { cause: error });
  };
  const stats = { entries: 0, skippedDevices: 0 };
  for await (const { entry, data } of members) {
    stats.entries++;
    const parts = partsOf(entry.path);
    const name = parts.at(-1);
    if (name === undefined) continue; // the root itself: keep the root as made
    const literal = `/${parts.slice(0, -1).join('/')}`;
    let parent = dirs.get(literal);
    if (parent === undefined) {
      parent = await resolveInRoot(view, literal).catch((error: unknown) => fail(entry, error));
      try {
        mkdirSync(join(root, parent), { recursive: true });
      } catch (error) {
        fail(entry, error);
      }
      dirs.set(literal, parent);
    }
    const parentHost = join(root, parent);
    const here = `${parent === '/' ? '' : parent}/${name}`;
    const host = join(root, here);

    if (name === OPAQUE) {
      for (const child of readdirSync(parentHost)) {
        if (!created.has(`${parent === '/' ? '' : parent}/${child}`)) remove(join(parentHost, child));
      }
      continue;
    }
    if (name.startsWith(WHITEOUT)) {
      if (!name.startsWith(`${WHITEOUT}${WHITEOUT}`)) remove(join(parentHost, name.slice(WHITEOUT.length)));
      continue; // `.wh..wh.*` other than the opaque marker: AUFS metadata, nothing to apply
    }
    if (entry.type === 'char' || entry.type === 'block' || entry.type === 'fifo') {
      stats.skippedDevices++;
      continue;
    }
    try {
      const old = exists(host);
      if (entry.type === 'dir') {
        if (old && !old.isDirectory()) remove(host);
        if (!old?.isDirectory()) mkdirSync(host);
        lchownSync(host, entry.uid, entry.gid);
        chmodSync(host, entry.mode);
      } else if (entry.type === 'hardlink') {
        const target = partsOf(entry.linkpath);
        const targetParent = await resolveInRoot(view, `/${target.slice(0, -1).join('/')}`);
        const source = join(root, targetParent, target.at(-1) ?? '');
        const st = exists(source);
        if (!st || st.isDirectory())
          throw new LayerError(`hard link to ${entry.linkpath}, which is not a file`);
        if (old) remove(host);
        linkSync(source, host);
      } else if (entry.type === 'symlink') {
        if (old) remove(host);
        symlinkSync(entry.linkpath, host);
        lchownSync(host, entry.uid, entry.gid);
        lutimesSync(host, entry.mtime, entry.mtime);
      } else {
        if (old) remove(host);
        // wx: O_CREAT|O_EXCL, so nothing (not a symlink either) is written through.
        const fd = openSync(host, 'wx', 0o600);
        try {
          for await (const chunk of data) writeSync(fd, chunk);
        } finally {
          closeSync(fd);
        }
        lchownSync(host, entry.uid, entry.gid);
        chmodSync(host, entry.mode); // after chown, which clears set-id bits
        utimesSync(host, entry.mtime, entry.mtime);
      }
    } catch (error) {
      fail(entry, error);
    }
    created.add(here);
  }
  return stats;
};

const hashing = (h: Hash) =>
  new Transform({
    transform(chunk: Buffer, _encoding, done) {
      h.update(chunk);
      done(null, chunk);
    },
  });

/**
 * Unpacks an archived image's layers into `root` (which must be empty or absent), checking each
 * layer's digest (compressed bytes) and diff_id (uncompressed tar) as it reads them.
 */
export const unpackImage = async (
  archive: OciArchive,
  image: ArchivedImage,
  root: string,
): Promise<ApplyStats> => {
  await mkdir(root, { recursive: true, mode: 0o755 });
  await chmod(root, 0o755);
  const total = { entries: 0, skippedDevices: 0 };
  for (const [i, layer] of image.manifest.layers.entries()) {
    const compressed = createHash('sha256');
    const uncompressed = createHash('sha256');
    const extent = archive.blobExtent(layer.digest, layer.size);
    const gzip = LAYER_MEDIA_TYPES[layer.mediaType] === 'gzip';
    const apply = async (source: AsyncIterable<Buffer>) => {
      // One iterator for the tar reader and the drain after it: the bytes after the end-of-archive
      // blocks still count for the digests.
      const it = source[Symbol.asyncIterator]();
      const s = await applyLayer(root, readTar({ [Symbol.asyncIterator]: () => it }));
      total.entries += s.entries;
      total.skippedDevices += s.skippedDevices;
      while (!(await it.next()).done) {
        // drained
      }
    };
    try {
      // Large chunks: each one is a thread-pool round trip for zlib.
      if (gzip)
        await pipeline(
          archive.stream(extent),
          hashing(compressed),
          createGunzip({ chunkSize: 1024 * 1024 }),
          hashing(uncompressed),
          apply,
        );
      else await pipeline(archive.stream(extent), hashing(compressed), hashing(uncompressed), apply);
    } catch (error) {
      if (error instanceof LayerError) throw error;
      throw new ImageArchiveError(`${archive.path}: layer ${layer.digest}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const digest = `sha256:${compressed.digest('hex')}`;
    const diffId = `sha256:${uncompressed.digest('hex')}`;
    if (digest !== layer.digest)
      throw new ImageArchiveError(`${archive.path}: layer ${layer.digest} has digest ${digest}: damaged`);
    if (diffId !== image.diffIds[i])
      throw new ImageArchiveError(
        `${archive.path}: layer ${layer.digest} unpacks to ${diffId}, config says ${image.diffIds[i]}`,
      );
  }
  return total;
};
