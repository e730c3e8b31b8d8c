import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open, rename, rm, stat } from 'node:fs/promises';
import { BLOCK } from './tar.ts';

/** A member of an image layer. Owners default to root; files come from bytes or a host file. */
export type LayerEntry = {
  /** Relative to the root, no leading slash: `usr/local/bin/etcd`. */
  readonly path: string;
  readonly mode: number;
  readonly uid?: number;
  readonly gid?: number;
} & (
  | { readonly type: 'dir' }
  | { readonly type: 'file'; readonly data: string | Buffer }
  | { readonly type: 'file'; readonly source: string }
  | { readonly type: 'symlink'; readonly target: string }
);

/** What an archive holds: one image (one layer) under every name in `refs`. */
export type ImageSpec = {
  readonly refs: readonly string[];
  /** The OCI config's `config` section: Env, Cmd, Entrypoint, WorkingDir, User, ExposedPorts. */
  readonly config: Readonly<Record<string, unknown>>;
  readonly entries: readonly LayerEntry[];
};

const TYPE_FLAG = { file: '0', symlink: '2', dir: '5' } as const;
// Every member gets the same time, so the same inputs give the same digests.
const MTIME = 0;

const octal = (n: number, width: number) => `${n.toString(8).padStart(width - 1, '0')}\0`;

const header = (
  name: string,
  size: number,
  e: { type: keyof typeof TYPE_FLAG; mode: number; uid?: number; gid?: number; linkname?: string },
) => {
  if (Buffer.byteLength(name) > 100 || Buffer.byteLength(e.linkname ?? '') > 100)
    throw new Error(`tar member ${name}: names over 100 bytes are not written`);
  const b = Buffer.alloc(BLOCK);
  b.write(name, 0, 'utf8');
  b.write(octal(e.mode, 8), 100, 'latin1');
  b.write(octal(e.uid ?? 0, 8), 108, 'latin1');
  b.write(octal(e.gid ?? 0, 8), 116, 'latin1');
  b.write(octal(size, 12), 124, 'latin1');
  b.write(octal(MTIME, 12), 136, 'latin1');
  b.write(' '.repeat(8), 148, 'latin1');
  b.write(TYPE_FLAG[e.type], 156, 'latin1');
  b.write(e.linkname ?? '', 157, 'utf8');
  b.write('ustar\0', 257, 'latin1');
  b.write('00', 263, 'latin1');
  let sum = 0;
  for (const x of b) sum += x;
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return b;
};

/** A tar file written member by member, its sha256 taken on the way. */
class TarFile {
  readonly #file: FileHandle;
  readonly #hash = createHash('sha256');
  #size = 0;

  private constructor(file: FileHandle) {
    this.#file = file;
  }

  static async create(path: string): Promise<TarFile> {
    return new TarFile(await open(path, 'w'));
  }

  async #write(b: Buffer) {
    await this.#file.write(b);
    this.#hash.update(b);
    this.#size += b.length;
  }

  async #pad(size: number) {
    const rest = (BLOCK - (size % BLOCK)) % BLOCK;
    if (rest > 0) await this.#write(Buffer.alloc(rest));
  }

  async add(e: LayerEntry): Promise<void> {
    if (e.type === 'dir') return this.#write(header(e.path.endsWith('/') ? e.path : `${e.path}/`, 0, e));
    if (e.type === 'symlink') return this.#write(header(e.path, 0, { ...e, linkname: e.target }));
    if ('data' in e) {
      const data = Buffer.from(e.data);
      await this.#write(header(e.path, data.length, e));
      await this.#write(data);
      return this.#pad(data.length);
    }
    const { size } = await stat(e.source);
    await this.#write(header(e.path, size, e));
    let copied = 0;
    for await (const chunk of createReadStream(e.source)) {
      await this.#write(chunk as Buffer);
      copied += (chunk as Buffer).length;
    }
    if (copied !== size) throw new Error(`${e.source} changed while it was archived`);
    await this.#pad(size);
  }

  /** Ends the archive; its digest and size. */
  async finish(): Promise<{ digest: string; size: number }> {
    await this.#write(Buffer.alloc(2 * BLOCK));
    await this.#file.close();
    return { digest: `sha256:${this.#hash.digest('hex')}`, size: this.#size };
  }

  async abandon(): Promise<void> {
    await this.#file.close().catch(() => undefined);
  }
}

const writeTar = async (path: string, entries: readonly LayerEntry[]) => {
  const tar = await TarFile.create(path);
  try {
    for (const e of entries) await tar.add(e);
    return await tar.finish();
  } catch (error) {
    await tar.abandon();
    throw error;
  }
};

const blob = (json: unknown) => {
  const data = Buffer.from(JSON.stringify(json));
  return { data, digest: `sha256:${createHash('sha256').update(data).digest('hex')}`, size: data.length };
};

const OCI_ARCH: Readonly<Record<string, string>> = { x64: 'amd64', arm64: 'arm64' };

/**
 * Writes an OCI archive (oci-layout, index.json, blobs; the layout `podman save --format
 * oci-archive` writes) holding `image` under each of its names, with one uncompressed layer. The
 * same inputs give the same bytes. Written beside `target` and renamed into place, so a reader
 * never sees half an archive.
 */
export const writeOciArchive = async (
  target: string,
  image: ImageSpec,
): Promise<{ manifestDigest: string }> => {
  const layerFile = `${target}.${process.pid}.layer`;
  const partial = `${target}.${process.pid}.partial`;
  try {
    const layer = await writeTar(layerFile, image.entries);
    const config = blob({
      architecture: OCI_ARCH[process.arch] ?? process.arch,
      os: 'linux',
      config: image.config,
      rootfs: { type: 'layers', diff_ids: [layer.digest] },
    });
    const manifest = blob({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: config.digest,
        size: config.size,
      },
      layers: [
        { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layer.digest, size: layer.size },
      ],
    });
    const index = {
      schemaVersion: 2,
      manifests: image.refs.map((ref) => ({
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        digest: manifest.digest,
        size: manifest.size,
        annotations: { 'org.opencontainers.image.ref.name': ref },
      })),
    };
    const blobPath = (digest: string) => `blobs/sha256/${digest.slice('sha256:'.length)}`;
    await writeTar(partial, [
      { path: 'oci-layout', type: 'file', mode: 0o644, data: '{"imageLayoutVersion":"1.0.0"}' },
      { path: 'index.json', type: 'file', mode: 0o644, data: JSON.stringify(index) },
      { path: 'blobs', type: 'dir', mode: 0o755 },
      { path: 'blobs/sha256', type: 'dir', mode: 0o755 },
      { path: blobPath(config.digest), type: 'file', mode: 0o644, data: config.data },
      { path: blobPath(manifest.digest), type: 'file', mode: 0o644, data: manifest.data },
      { path: blobPath(layer.digest), type: 'file', mode: 0o644, source: layerFile },
    ]);
    await rename(partial, target);
    return { manifestDigest: manifest.digest };
  } finally {
    await rm(layerFile, { force: true });
    await rm(partial, { force: true });
  }
};
