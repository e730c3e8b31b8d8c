import { copyFile, mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { OciArchive } from './archive.ts';
import { ImageArchiveError } from './image-config.ts';
import { ARCHIVE_SUFFIX } from './store.ts';

/**
 * `kind load image-archive` for the test bed: checks an OCI archive (every image named, manifest
 * and config digests right) and copies it into `dir`, where the node agent finds it at the next
 * container start. Returns the names it holds.
 */
export const loadImageArchive = async (archivePath: string, dir: string): Promise<string[]> => {
  const images = await (async () => {
    await using archive = await OciArchive.open(archivePath);
    return await archive.images(); // before the archive is closed
  })();
  const unnamed = images.filter((i) => !i.ref);
  if (unnamed.length > 0)
    throw new ImageArchiveError(
      `${archivePath}: image ${unnamed[0]?.manifestDigest} has no name (org.opencontainers.image.ref.name); save it with a tag`,
    );
  const first = images[0]?.manifestDigest.slice('sha256:'.length, 'sha256:'.length + 16) ?? '';
  await mkdir(dir, { recursive: true });
  const target = join(dir, `${first}${ARCHIVE_SUFFIX}`);
  const partial = `${target}.${process.pid}.partial`;
  try {
    await copyFile(archivePath, partial);
    await rename(partial, target);
  } finally {
    await rm(partial, { force: true });
  }
  return images.map((i) => i.ref as string);
};
