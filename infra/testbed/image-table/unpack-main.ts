import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OciArchive } from './archive.ts';
import { unpackImage } from './unpack.ts';

/**
 * `node unpack-main.ts <archive> <manifest digest> <root>`: unpacks one image of an archive. A
 * process of its own, because unpacking uses synchronous file calls (see applyLayer) that would
 * stall the node agent's probes and heartbeats.
 */
const main = async (archivePath: string, digest: string, root: string) => {
  await using archive = await OciArchive.open(archivePath);
  const image = (await archive.images()).find((i) => i.manifestDigest === digest);
  if (!image) throw new Error(`${archivePath} holds no image ${digest}`);
  const stats = await unpackImage(archive, image, root);
  process.stdout.write(`${JSON.stringify(stats)}\n`);
};

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [archive, digest, root] = process.argv.slice(2);
  if (!archive || !digest || !root) {
    process.stderr.write('usage: unpack-main.ts <archive> <manifest digest> <root>\n');
    process.exit(64);
  }
  await main(archive, digest, root).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
