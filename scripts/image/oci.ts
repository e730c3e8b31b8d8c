import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { z } from 'zod';
import { run } from './exec.ts';

const zDigest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'a sha256 digest');
const zDescriptor = z.object({
  mediaType: z.string(),
  digest: zDigest,
  size: z.number().int().nonnegative(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const zIndex = z.object({ schemaVersion: z.literal(2), manifests: z.array(zDescriptor).min(1) });
const LAYER_TYPES = ['application/vnd.oci.image.layer.v1.tar', 'application/vnd.oci.image.layer.v1.tar+gzip'];
const zManifest = z.object({
  schemaVersion: z.literal(2),
  config: zDescriptor.extend({ mediaType: z.literal('application/vnd.oci.image.config.v1+json') }),
  layers: z.array(zDescriptor.extend({ mediaType: z.enum(LAYER_TYPES) })),
});
/** The parts of an image config a runtime needs to start a container (OCI image spec, config). */
const zConfig = z.object({
  architecture: z.string(),
  os: z.string(),
  config: z.looseObject({
    User: z.string().optional(),
    Env: z.array(z.string()).nullish(),
    Entrypoint: z.array(z.string()).nullish(),
    Cmd: z.array(z.string()).nullish(),
    WorkingDir: z.string().optional(),
    Labels: z.record(z.string(), z.string()).nullish(),
    StopSignal: z.string().optional(),
  }),
  rootfs: z.object({ type: z.literal('layers'), diff_ids: z.array(zDigest) }),
});
export type ImageConfig = z.infer<typeof zConfig>;
export type Descriptor = z.infer<typeof zDescriptor>;

export type OciImage = {
  /** org.opencontainers.image.ref.name of the index entry (podman save: repo:tag). */
  ref: string | undefined;
  manifest: z.infer<typeof zManifest>;
  config: ImageConfig;
  /** Path of a blob in the unpacked layout. */
  blob(digest: string): string;
};

const sha256File = (file: string) =>
  new Promise<string>((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (c) => h.update(c))
      .on('error', reject)
      .on('end', () => resolve(`sha256:${h.digest('hex')}`));
  });

/** Reads a blob, refusing one whose bytes do not match its digest. */
const verified = async (dir: string, d: Descriptor): Promise<string> => {
  const file = join(dir, 'blobs', 'sha256', d.digest.slice('sha256:'.length));
  const got = await sha256File(file);
  if (got !== d.digest) throw new Error(`blob ${d.digest} has digest ${got}: the archive is damaged`);
  return file;
};

const parseJson = <T>(schema: z.ZodType<T>, file: string, what: string): T => {
  const r = schema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!r.success)
    throw new Error(
      `${what} (${file}): ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return r.data;
};

/**
 * An OCI archive (`podman save --format oci-archive`) unpacked into `dir` and read the way a
 * runtime does: index.json → the first manifest → config and layers, each checked by digest.
 */
export const openOciArchive = async (archive: string, dir: string): Promise<OciImage> => {
  await mkdir(dir, { recursive: true });
  await run('tar', ['-xf', archive, '-C', dir]);
  const index = parseJson(zIndex, join(dir, 'index.json'), 'index');
  const top = index.manifests[0];
  if (!top) throw new Error(`${archive}: index.json lists no manifest`);
  const manifest = parseJson(zManifest, await verified(dir, top), 'manifest');
  const config = parseJson(zConfig, await verified(dir, manifest.config), 'config');
  for (const layer of manifest.layers) await verified(dir, layer);
  if (config.rootfs.diff_ids.length !== manifest.layers.length)
    throw new Error(
      `${archive}: ${manifest.layers.length} layers, ${config.rootfs.diff_ids.length} diff_ids`,
    );
  return {
    ref: top.annotations?.['org.opencontainers.image.ref.name'],
    manifest,
    config,
    blob: (digest) => join(dir, 'blobs', 'sha256', digest.slice('sha256:'.length)),
  };
};

/**
 * The image's file system: its layers applied in order into `root`, whiteouts (`.wh.<name>`
 * deletes a lower file, `.wh..wh..opq` empties a directory) honoured. Uses the host's tar as
 * root, so only for images this project built: a hostile layer could write through a symlink.
 */
export const unpackLayers = async (image: OciImage, root: string): Promise<void> => {
  await mkdir(root, { recursive: true });
  for (const layer of image.manifest.layers) {
    const file = image.blob(layer.digest);
    const entries = (await run('tar', ['-tf', file])).stdout.split('\n').filter(Boolean);
    for (const entry of entries) {
      const path = normalize(entry);
      if (path.startsWith('..') || path.startsWith('/'))
        throw new Error(`layer ${layer.digest}: entry ${entry} leaves the root`);
      const name = path.split('/').pop() ?? '';
      if (!name.startsWith('.wh.')) continue;
      const dir = join(root, dirname(path));
      if (name === '.wh..wh..opq')
        for (const child of await readdir(dir).catch(() => []))
          await rm(join(dir, child), { recursive: true });
      else await rm(join(dir, name.slice('.wh.'.length)), { recursive: true, force: true });
    }
    await run('tar', ['-xf', file, '-C', root, '--numeric-owner', '--same-permissions', '--exclude=.wh.*']);
  }
};
