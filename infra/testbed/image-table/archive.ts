import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import {
  ImageArchiveError,
  type ImageConfig,
  imageConfigOf,
  type OciManifest,
  parseDocument,
  zOciConfig,
  zOciIndex,
  zOciManifest,
} from './image-config.ts';
import { BLOCK, parseHeader, recordOverrides } from './tar.ts';

/** Where a member's bytes are inside the archive file. */
type Extent = { readonly offset: number; readonly size: number };

/** One image of an OCI archive (`podman save --format oci-archive`, `skopeo copy oci-archive:`). */
export type ArchivedImage = {
  /** `org.opencontainers.image.ref.name` of its index entry, e.g. `localhost/tideway:1a2b3c`. */
  readonly ref: string | undefined;
  readonly manifestDigest: string;
  readonly manifest: OciManifest;
  readonly config: ImageConfig;
  /** What it was built for, and its labels (metadata a runtime does not act on). */
  readonly platform: { readonly os: string; readonly architecture: string };
  readonly labels: Readonly<Record<string, string>>;
  readonly diffIds: readonly string[];
};

const MAX_DOCUMENT = 4 * 1024 * 1024;
const padded = (size: number) => Math.ceil(size / BLOCK) * BLOCK;

/**
 * The members of an uncompressed tar file by name, found by reading headers only (a seek past
 * each member's data): a 60 MB archive costs a few hundred small reads, nothing is extracted.
 */
const members = async (file: FileHandle, name: string): Promise<Map<string, Extent>> => {
  const out = new Map<string, Extent>();
  const { size: total } = await file.stat();
  const block = Buffer.alloc(BLOCK);
  let offset = 0;
  let pending: Record<string, string> = {};
  while (offset + BLOCK <= total) {
    const { bytesRead } = await file.read(block, 0, BLOCK, offset);
    if (bytesRead < BLOCK) break;
    const header = (() => {
      try {
        return parseHeader(block, pending);
      } catch (error) {
        throw new ImageArchiveError(`${name}: not a tar archive (${(error as Error).message})`);
      }
    })();
    if (header.kind === 'end') break;
    offset += BLOCK;
    if (header.kind === 'record') {
      if (header.size > MAX_DOCUMENT) throw new ImageArchiveError(`${name}: tar record too large`);
      const data = Buffer.alloc(header.size);
      await file.read(data, 0, header.size, offset);
      pending = { ...pending, ...recordOverrides(header.record, data) };
      offset += padded(header.size);
      continue;
    }
    pending = {};
    const path = header.entry.path.replace(/^(\.\/)+/, '');
    if (header.entry.type === 'file') out.set(path, { offset, size: header.entry.size });
    offset += padded(header.entry.size);
  }
  return out;
};

/** Reads an OCI image layout kept as one tar file, checking every blob it reads by digest. */
export class OciArchive {
  readonly path: string;
  readonly #file: FileHandle;
  readonly #members: Map<string, Extent>;

  private constructor(path: string, file: FileHandle, m: Map<string, Extent>) {
    this.path = path;
    this.#file = file;
    this.#members = m;
  }

  static async open(path: string): Promise<OciArchive> {
    const file = await open(path, 'r');
    try {
      const m = await members(file, path);
      if (!m.has('oci-layout') || !m.has('index.json'))
        throw new ImageArchiveError(
          `${path}: not an OCI archive (no oci-layout or index.json; a docker-archive is not supported, save with --format oci-archive)`,
        );
      return new OciArchive(path, file, m);
    } catch (error) {
      await file.close();
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.#file.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #extent(name: string): Extent {
    const e = this.#members.get(name);
    if (!e) throw new ImageArchiveError(`${this.path}: ${name} is missing`);
    return e;
  }

  /** Where a blob's bytes are; its size must match the descriptor's. */
  blobExtent(digest: string, size: number): Extent {
    const e = this.#extent(`blobs/sha256/${digest.slice('sha256:'.length)}`);
    if (e.size !== size)
      throw new ImageArchiveError(
        `${this.path}: blob ${digest} has ${e.size} bytes, its descriptor says ${size}`,
      );
    return e;
  }

  async #read(name: string, e: Extent): Promise<Buffer> {
    if (e.size > MAX_DOCUMENT) throw new ImageArchiveError(`${this.path}: ${name} is larger than 4 MiB`);
    const data = Buffer.alloc(e.size);
    await this.#file.read(data, 0, e.size, e.offset);
    return data;
  }

  /** A small blob (manifest, config), refused when its bytes do not have its digest. */
  async #blob(digest: string, size: number): Promise<Buffer> {
    const data = await this.#read(digest, this.blobExtent(digest, size));
    const got = `sha256:${createHash('sha256').update(data).digest('hex')}`;
    if (got !== digest)
      throw new ImageArchiveError(`${this.path}: blob ${digest} has digest ${got}: damaged`);
    return data;
  }

  /** Every image the archive's index names (nested indexes, i.e. multi-platform images, are refused). */
  async images(): Promise<ArchivedImage[]> {
    const index = parseDocument(
      zOciIndex,
      await this.#read('index.json', this.#extent('index.json')),
      `${this.path}: index.json`,
    );
    const out: ArchivedImage[] = [];
    for (const d of index.manifests) {
      if (d.mediaType !== 'application/vnd.oci.image.manifest.v1+json')
        throw new ImageArchiveError(
          `${this.path}: index entry ${d.digest} is a ${d.mediaType}; only single-platform image manifests are supported`,
        );
      const manifest = parseDocument(
        zOciManifest,
        await this.#blob(d.digest, d.size),
        `${this.path}: manifest ${d.digest}`,
      );
      const config = parseDocument(
        zOciConfig,
        await this.#blob(manifest.config.digest, manifest.config.size),
        `${this.path}: config ${manifest.config.digest}`,
      );
      if (config.rootfs.diff_ids.length !== manifest.layers.length)
        throw new ImageArchiveError(
          `${this.path}: ${manifest.layers.length} layers but ${config.rootfs.diff_ids.length} diff_ids`,
        );
      for (const layer of manifest.layers) this.blobExtent(layer.digest, layer.size);
      out.push({
        ref: d.annotations?.['org.opencontainers.image.ref.name'],
        manifestDigest: d.digest,
        manifest,
        config: imageConfigOf(config),
        platform: { os: config.os, architecture: config.architecture },
        labels: config.config?.Labels ?? {},
        diffIds: config.rootfs.diff_ids,
      });
    }
    return out;
  }

  /** A blob's raw bytes as a stream (the caller checks the digest as it reads). */
  stream(e: Extent): NodeJS.ReadableStream {
    return createReadStream(this.path, {
      start: e.offset,
      end: e.offset + e.size - 1,
      highWaterMark: 1024 * 1024,
    });
  }
}
