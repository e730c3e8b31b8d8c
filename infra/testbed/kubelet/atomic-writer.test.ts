import {
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type FileProjection, PayloadPathError, writeAtomic } from './atomic-writer.ts';

const root = await mkdtemp(join(tmpdir(), 'tideway-atomic-'));
let n = 0;
const freshDir = () => join(root, `v${n++}`);
const file = (text: string | Buffer, mode = 0o644): FileProjection => ({
  data: Buffer.isBuffer(text) ? text : Buffer.from(text),
  mode,
});
const payload = (entries: Record<string, FileProjection>) => new Map(Object.entries(entries));
const stamps = async (dir: string) =>
  (await readdir(dir)).filter((e) => e.startsWith('..') && e !== '..data');

describe('writeAtomic', () => {
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('lays the files out like kubelet: a timestamped dir, `..data` to it, names through `..data`', async () => {
    const dir = freshDir();
    expect(
      await writeAtomic(dir, payload({ 'redis.conf': file('port 6379\n'), 'a/b/c': file('deep', 0o400) })),
    ).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['..data', 'a', 'redis.conf', ...(await stamps(dir))].sort());
    expect(await stamps(dir)).toEqual([expect.stringMatching(/^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\./)]);
    expect(await readlink(join(dir, '..data'))).toBe((await stamps(dir))[0]);
    expect(await readlink(join(dir, 'redis.conf'))).toBe('..data/redis.conf');
    expect(await readlink(join(dir, 'a'))).toBe('..data/a');
    expect(await readFile(join(dir, 'redis.conf'), 'utf8')).toBe('port 6379\n');
    expect(await readFile(join(dir, 'a/b/c'), 'utf8')).toBe('deep');
    expect((await stat(join(dir, 'a/b/c'))).mode & 0o7777).toBe(0o400);
    expect((await stat(join(dir, 'redis.conf'))).mode & 0o7777).toBe(0o644);
    expect((await stat(join(dir, '..data'))).mode & 0o7777).toBe(0o755);
  });

  it('swaps to a new version in place: same directory, new files, removed names gone, old version gone', async () => {
    const dir = freshDir();
    await writeAtomic(dir, payload({ keep: file('1'), drop: file('x'), nested: file('n') }));
    const before = await stamps(dir);
    const dirIno = (await stat(dir)).ino;
    expect(await writeAtomic(dir, payload({ keep: file('2'), added: file('new') }))).toBe(true);
    expect((await stat(dir)).ino).toBe(dirIno); // a bind mount of dir keeps seeing it
    const after = await stamps(dir);
    expect(after).toHaveLength(1);
    expect(after).not.toEqual(before);
    expect((await readdir(dir)).filter((e) => !e.startsWith('..')).sort()).toEqual(['added', 'keep']);
    expect(await readFile(join(dir, 'keep'), 'utf8')).toBe('2');
    expect(await readFile(join(dir, 'added'), 'utf8')).toBe('new');
  });

  it('writes nothing when the volume already holds the payload, and rewrites on a mode change', async () => {
    const dir = freshDir();
    await writeAtomic(dir, payload({ k: file('v') }));
    const first = await stamps(dir);
    expect(await writeAtomic(dir, payload({ k: file('v') }))).toBe(false);
    expect(await stamps(dir)).toEqual(first);
    expect(await writeAtomic(dir, payload({ k: file('v', 0o400) }))).toBe(true);
    expect((await stat(join(dir, 'k'))).mode & 0o7777).toBe(0o400);
  });

  it('empties the volume for an empty payload and fills it again later', async () => {
    const dir = freshDir();
    await writeAtomic(dir, payload({ k: file('v') }));
    expect(await writeAtomic(dir, payload({}))).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['..data', ...(await stamps(dir))].sort());
    await writeAtomic(dir, payload({ k: file('again') }));
    expect(await readFile(join(dir, 'k'), 'utf8')).toBe('again');
  });

  it('repairs a visible name that is missing or wrong, and cleans up after an interrupted write', async () => {
    const dir = freshDir();
    await writeAtomic(dir, payload({ k: file('v'), j: file('w') }));
    await rm(join(dir, 'k'));
    await rm(join(dir, 'j'));
    await writeFile(join(dir, 'j'), 'stray');
    await mkdir(join(dir, '..2020_01_01_00_00_00.crashed'));
    await symlink('..2020_01_01_00_00_00.crashed', join(dir, '..data_tmp'));
    expect(await writeAtomic(dir, payload({ k: file('v'), j: file('w') }))).toBe(true);
    expect(await readFile(join(dir, 'k'), 'utf8')).toBe('v');
    expect((await lstat(join(dir, 'j'))).isSymbolicLink()).toBe(true);
    expect(await readFile(join(dir, 'j'), 'utf8')).toBe('w');
    expect(await stamps(dir)).toHaveLength(1);
  });

  it('refuses paths that would leave the volume or clash with its own names', async () => {
    for (const bad of ['/etc/passwd', '../up', 'a/../../up', '..data', '..hidden', 'a//b', './a', '']) {
      await expect(writeAtomic(freshDir(), payload({ [bad]: file('x') })), bad).rejects.toBeInstanceOf(
        PayloadPathError,
      );
    }
  });

  it('never lets a concurrent reader see a half-written file or a mix of two versions', async () => {
    const dir = freshDir();
    const size = 256 * 1024;
    const version = (v: number) => ({
      one: file(Buffer.alloc(size, 65 + v)),
      two: file(Buffer.alloc(size / 2, 97 + v)),
    });
    await writeAtomic(dir, payload(version(0)));
    let writing = true;
    const seen = new Set<string>();
    const reads = { count: 0, bad: [] as string[] };
    const check = (name: string, data: Buffer, length: number) => {
      reads.count++;
      const first = data[0];
      if (data.length !== length || first === undefined || !data.equals(Buffer.alloc(length, first)))
        reads.bad.push(`${name}: ${data.length} bytes, ${new Set(data).size} distinct values`);
      else seen.add(`${name}:${String.fromCharCode(first)}`);
    };
    const reader = async () => {
      while (writing) {
        // Both names through one resolution of `..data`: a snapshot of a single version.
        const stamp = await readlink(join(dir, '..data'));
        const [one, two] = await Promise.all([
          readFile(join(dir, 'one')).catch(() => undefined),
          readFile(join(dir, stamp, 'two')).catch(() => undefined),
        ]);
        if (one) check('one', one, size);
        if (two) check('two', two, size / 2);
      }
    };
    const readers = [reader(), reader(), reader()];
    for (let v = 1; v <= 20; v++) await writeAtomic(dir, payload(version(v)));
    writing = false;
    await Promise.all(readers);
    expect(reads.bad).toEqual([]);
    expect(reads.count).toBeGreaterThan(50);
    expect(seen.size).toBeGreaterThan(4); // the readers did overlap the writes
  });
});
