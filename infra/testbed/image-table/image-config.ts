import { z } from 'zod';

/** What a runtime takes from an image to start a container (OCI image config, `config`). */
export type ImageConfig = {
  /** ENTRYPOINT; empty when the image has none. */
  readonly entrypoint: readonly string[];
  /** CMD: the default arguments, replaced by a pod's `args`. */
  readonly cmd: readonly string[];
  /** `NAME=value` entries, in order. */
  readonly env: readonly string[];
  /** Empty means `/`. */
  readonly workingDir: string;
  /** `user[:group]`, by number or by name; empty means root. */
  readonly user: string;
};

const zDigest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'a sha256 digest');

export const zOciDescriptor = z.object({
  mediaType: z.string(),
  digest: zDigest,
  size: z.number().int().nonnegative(),
  annotations: z.record(z.string(), z.string()).nullish(),
});

export const zOciIndex = z.object({
  schemaVersion: z.literal(2),
  manifests: z.array(zOciDescriptor).min(1, 'an image index lists at least one manifest'),
});

export const LAYER_MEDIA_TYPES = {
  'application/vnd.oci.image.layer.v1.tar': 'tar',
  'application/vnd.oci.image.layer.v1.tar+gzip': 'gzip',
  'application/vnd.docker.image.rootfs.diff.tar.gzip': 'gzip',
} as const;

export const zOciManifest = z.object({
  schemaVersion: z.literal(2),
  config: zOciDescriptor,
  layers: z.array(
    zOciDescriptor.extend({
      mediaType: z.enum(Object.keys(LAYER_MEDIA_TYPES) as [keyof typeof LAYER_MEDIA_TYPES]),
    }),
  ),
});

export const zOciConfig = z.object({
  architecture: z.string(),
  os: z.literal('linux'),
  config: z
    .looseObject({
      User: z.string().nullish(),
      Env: z.array(z.string()).nullish(),
      Entrypoint: z.array(z.string()).nullish(),
      Cmd: z.array(z.string()).nullish(),
      WorkingDir: z.string().nullish(),
      Labels: z.record(z.string(), z.string()).nullish(),
    })
    .nullish(),
  rootfs: z.object({ type: z.literal('layers'), diff_ids: z.array(zDigest) }),
});

export type OciManifest = z.infer<typeof zOciManifest>;
export type OciConfig = z.infer<typeof zOciConfig>;

/** The runtime's view of an OCI config. */
export const imageConfigOf = (c: OciConfig): ImageConfig => ({
  entrypoint: c.config?.Entrypoint ?? [],
  cmd: c.config?.Cmd ?? [],
  env: c.config?.Env ?? [],
  workingDir: c.config?.WorkingDir ?? '',
  user: c.config?.User ?? '',
});

/** Parses JSON against a schema; the error names the document and every problem's path. */
export const parseDocument = <T>(schema: z.ZodType<T>, bytes: Buffer, what: string): T => {
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new ImageArchiveError(`${what} is not JSON: ${(error as Error).message}`);
  }
  const r = schema.safeParse(raw);
  if (!r.success)
    throw new ImageArchiveError(
      `${what}: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  return r.data;
};

/** An image archive that cannot be used: damaged, of an unknown format, or hostile. */
export class ImageArchiveError extends Error {
  override readonly name = 'ImageArchiveError';
  readonly retry = false; // the same archive fails the same way
}
