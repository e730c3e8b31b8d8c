import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { OciArchive } from './archive.ts';
import { ImageArchiveError, type ImageConfig } from './image-config.ts';

/** An image the node holds as an OCI archive. */
export type HeldImage = {
  /** Its name in the archive (`org.opencontainers.image.ref.name`). */
  readonly ref: string;
  readonly archive: string;
  readonly manifestDigest: string;
  readonly config: ImageConfig;
};

/** The images a node holds, like a runtime's image store with everything already pulled. */
export type ImageStore = {
  /** The held image a pod's `image` names (the newest archive wins a tie); undefined when none. */
  find(image: string): Promise<HeldImage | undefined>;
  /** The image's root file system, unpacked once per manifest digest and kept across runs. */
  rootfs(image: HeldImage): Promise<string>;
  /** Every held name, for messages. */
  refs(): Promise<string[]>;
};

export const ARCHIVE_SUFFIX = '.oci.tar';

/** `docker.io/library/redis` → `redis:latest`; digest references keep their digest. */
export const normalizeRef = (ref: string): string => {
  const name = ref.replace(/^docker\.io\//, '').replace(/^library\//, '');
  if (name.includes('@')) return name;
  const lastPart = name.slice(name.lastIndexOf('/') + 1);
  return lastPart.includes(':') ? name : `${name}:latest`;
};

/** Whether a pod's image reference names a held image: by name and tag, or by manifest digest. */
export const refMatches = (wanted: string, held: { ref: string; manifestDigest: string }): boolean => {
  const w = normalizeRef(wanted);
  const at = w.indexOf('@');
  if (at < 0) return w === normalizeRef(held.ref);
  const name = w.slice(0, at);
  const heldName = normalizeRef(held.ref).replace(/:[^:/]*$/, '');
  const wantedName = name.replace(/:[^:/]*$/, '');
  return w.slice(at + 1) === held.manifestDigest && wantedName === heldName;
};

type Indexed = { key: string; mtimeMs: number; images: HeldImage[] };

const UNPACK_MAIN = fileURLToPath(new URL('./unpack-main.ts', import.meta.url));
const HEX = /^[0-9a-f]{64}$/;

/**
 * Images held as OCI archives (`*.oci.tar`) in `dirs`, found again whenever a directory changes
 * (dropping an archive in is how an image is loaded); each unpacked into `cache/<digest>/rootfs`
 * the first time a container needs it, by a child process, and kept for later runs. Unpacked
 * roots of images no longer held are removed, except those this store handed out.
 */
export const openImageStore = (o: {
  dirs: readonly string[];
  cache: string;
  log?: (message: string) => void;
}): ImageStore => {
  const log = o.log ?? (() => undefined);
  const index = new Map<string, Indexed>();
  const unpacking = new Map<string, Promise<string>>();
  const used = new Set<string>();

  const scan = async (): Promise<HeldImage[]> => {
    const found: { path: string; mtimeMs: number; size: number }[] = [];
    for (const dir of o.dirs) {
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const name of names.filter((n) => n.endsWith(ARCHIVE_SUFFIX))) {
        const st = await stat(join(dir, name)).catch(() => undefined);
        if (st?.isFile()) found.push({ path: join(dir, name), mtimeMs: st.mtimeMs, size: st.size });
      }
    }
    const out: Indexed[] = [];
    for (const f of found) {
      const key = `${f.size}:${f.mtimeMs}`;
      let entry = index.get(f.path);
      if (entry?.key !== key) {
        let images: HeldImage[] = [];
        try {
          await using archive = await OciArchive.open(f.path);
          images = (await archive.images()).flatMap((i) =>
            i.ref
              ? [{ ref: i.ref, archive: f.path, manifestDigest: i.manifestDigest, config: i.config }]
              : [],
          );
        } catch (error) {
          log(`[images] ${f.path} is not usable: ${(error as Error).message}`);
        }
        entry = { key, mtimeMs: f.mtimeMs, images };
        index.set(f.path, entry);
      }
      out.push(entry);
    }
    for (const path of index.keys()) if (!found.some((f) => f.path === path)) index.delete(path);
    return out.sort((a, b) => b.mtimeMs - a.mtimeMs).flatMap((e) => e.images);
  };

  const prune = async () => {
    const held = new Set((await scan()).map((i) => i.manifestDigest.slice('sha256:'.length)));
    for (const name of await readdir(o.cache).catch(() => [] as string[])) {
      const stale = HEX.test(name) && !held.has(name) && !used.has(name);
      const partial = name.startsWith('.') && !name.endsWith(`.${process.pid}`);
      if (stale || partial) {
        log(`[images] removing the unpacked ${name}`);
        await rm(join(o.cache, name), { recursive: true, force: true });
      }
    }
  };

  const unpack = async (image: HeldImage, hex: string): Promise<string> => {
    const dir = join(o.cache, hex);
    if (existsSync(join(dir, 'image.json'))) return join(dir, 'rootfs');
    const tmp = join(o.cache, `.${hex}.${process.pid}`);
    await rm(tmp, { recursive: true, force: true });
    const started = Date.now();
    log(`[images] unpacking ${image.ref} (${image.manifestDigest}) from ${image.archive}`);
    try {
      await promisify(execFile)(
        process.execPath,
        [UNPACK_MAIN, image.archive, image.manifestDigest, join(tmp, 'rootfs')],
        {
          maxBuffer: 1024 * 1024,
        },
      );
    } catch (error) {
      await rm(tmp, { recursive: true, force: true });
      const stderr = String((error as { stderr?: string }).stderr ?? '').trim();
      throw new ImageArchiveError(
        `unpacking ${image.ref} from ${image.archive}: ${stderr || String(error)}`,
        {
          cause: error,
        },
      );
    }
    await writeFile(join(tmp, 'image.json'), `${JSON.stringify(image, null, 2)}\n`);
    await rename(tmp, dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another node agent unpacked it meanwhile: keep theirs.
      await rm(tmp, { recursive: true, force: true });
      if (!existsSync(join(dir, 'image.json'))) throw error;
    });
    log(`[images] unpacked ${image.ref} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await prune().catch((error: unknown) => log(`[images] prune: ${String(error)}`));
    return join(dir, 'rootfs');
  };

  return {
    find: async (wanted) => (await scan()).find((i) => refMatches(wanted, i)),
    rootfs: (image) => {
      const hex = image.manifestDigest.slice('sha256:'.length);
      used.add(hex);
      let p = unpacking.get(hex);
      if (!p) {
        p = unpack(image, hex).finally(() => unpacking.delete(hex));
        unpacking.set(hex, p);
      }
      return p;
    },
    refs: async () => [...new Set((await scan()).map((i) => i.ref))],
  };
};
