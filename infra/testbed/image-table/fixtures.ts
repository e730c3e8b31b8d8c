import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

/** Test fixtures: tar streams and OCI archives built byte by byte, hostile ones included. */

export type FixtureEntry = {
  path: string;
  type?: 'file' | 'dir' | 'symlink' | 'hardlink';
  data?: string | Buffer;
  linkpath?: string;
  mode?: number;
  uid?: number;
  gid?: number;
};

const FLAGS = { file: '0', hardlink: '1', symlink: '2', dir: '5' } as const;

const octal = (n: number, width: number) => `${n.toString(8).padStart(width - 1, '0')}\0`;

const header = (name: string, size: number, flag: string, e: Partial<FixtureEntry>): Buffer => {
  const b = Buffer.alloc(512);
  b.write(name.slice(0, 100), 0, 'utf8');
  b.write(octal(e.mode ?? (flag === '5' ? 0o755 : 0o644), 8), 100, 'latin1');
  b.write(octal(e.uid ?? 0, 8), 108, 'latin1');
  b.write(octal(e.gid ?? 0, 8), 116, 'latin1');
  b.write(octal(size, 12), 124, 'latin1');
  b.write(octal(1_700_000_000, 12), 136, 'latin1');
  b.write('        ', 148, 'latin1');
  b.write(flag, 156, 'latin1');
  b.write((e.linkpath ?? '').slice(0, 100), 157, 'utf8');
  b.write('ustar\0', 257, 'latin1');
  b.write('00', 263, 'latin1');
  let sum = 0;
  for (const x of b) sum += x;
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return b;
};

const pad = (data: Buffer) => Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);

/** A pax record `<len> key=value\n`, its length counting itself. */
const paxRecord = (key: string, value: string) => {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len++;
  return `${len}${body}`;
};

/** A tar stream; names over 100 bytes get a pax header, as GNU and Go's tar write them. */
export const tarOf = (entries: readonly FixtureEntry[]): Buffer => {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const type = e.type ?? 'file';
    const data = type === 'file' ? Buffer.from(e.data ?? '') : Buffer.alloc(0);
    if (Buffer.byteLength(e.path) > 100 || Buffer.byteLength(e.linkpath ?? '') > 100) {
      const pax = Buffer.from(
        paxRecord('path', e.path) + (e.linkpath ? paxRecord('linkpath', e.linkpath) : ''),
      );
      parts.push(header('PaxHeader', pax.length, 'x', {}), pad(pax));
    }
    parts.push(header(e.path, data.length, FLAGS[type], e), pad(data));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
};

const digestOf = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export type FixtureImage = {
  ref?: string;
  layers: readonly (readonly FixtureEntry[])[];
  config?: Record<string, unknown>;
  /** Change the layers' bytes after their digests were taken (the gzip header's time: still unpacks). */
  damage?: boolean;
};

/** An OCI archive (oci-layout, index.json, blobs) holding `images`, as `podman save` lays it out. */
export const ociArchiveOf = (images: readonly FixtureImage[]): Buffer => {
  const blobs = new Map<string, Buffer>();
  const manifests = images.map((img) => {
    const layers = img.layers.map((entries) => {
      const tar = tarOf(entries);
      const gz = gzipSync(tar);
      const digest = digestOf(gz);
      if (img.damage) gz[4] = (gz[4] ?? 0) ^ 0xff;
      blobs.set(digest, gz);
      return { digest, size: gz.length, diffId: digestOf(tar) };
    });
    const config = Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: img.config ?? {},
        rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
      }),
    );
    blobs.set(digestOf(config), config);
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: {
          mediaType: 'application/vnd.oci.image.config.v1+json',
          digest: digestOf(config),
          size: config.length,
        },
        layers: layers.map((l) => ({
          mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip',
          digest: l.digest,
          size: l.size,
        })),
      }),
    );
    blobs.set(digestOf(manifest), manifest);
    return {
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      digest: digestOf(manifest),
      size: manifest.length,
      ...(img.ref ? { annotations: { 'org.opencontainers.image.ref.name': img.ref } } : {}),
    };
  });
  return tarOf([
    { path: 'blobs/', type: 'dir' },
    { path: 'blobs/sha256/', type: 'dir' },
    ...[...blobs].map(([d, data]) => ({ path: `blobs/sha256/${d.slice(7)}`, data })),
    { path: 'index.json', data: JSON.stringify({ schemaVersion: 2, manifests }) },
    { path: 'oci-layout', data: '{"imageLayoutVersion": "1.0.0"}' },
  ]);
};
