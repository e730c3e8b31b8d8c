import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { type Log, run } from './exec.ts';
import { sha256 } from './key.ts';

/** A Debian package as the archive offers it: what goes into the base and its key. */
export type Deb = { name: string; version: string; architecture: string; filename: string; sha256: string };

const zDeb = z.object({
  Package: z.string().min(1),
  Version: z.string().min(1),
  Architecture: z.string().min(1),
  Filename: z.string().regex(/\.deb$/),
  SHA256: z.string().regex(/^[0-9a-f]{64}$/),
});
const zMemo = z.array(
  z.object({
    name: z.string(),
    version: z.string(),
    architecture: z.string(),
    filename: z.string(),
    sha256: z.string(),
  }),
);

/** The stanzas of `apt-cache show` (with --no-all-versions: each package's candidate). */
export const parseAptShow = (text: string): Deb[] =>
  text
    .split(/\n\n+/)
    .filter((s) => s.trim())
    .map((stanza) => {
      const fields: Record<string, string> = {};
      for (const line of stanza.split('\n')) {
        const m = /^([A-Za-z0-9-]+): (.*)$/.exec(line);
        if (m?.[1] && m[2] !== undefined) fields[m[1]] = m[2];
      }
      const r = zDeb.safeParse(fields);
      if (!r.success)
        throw new Error(
          `apt-cache show gave an unusable stanza (${r.error.issues.map((i) => i.path.join('.')).join(', ')})`,
        );
      const d = r.data;
      return {
        name: d.Package,
        version: d.Version,
        architecture: d.Architecture,
        filename: d.Filename,
        sha256: d.SHA256,
      };
    });

/**
 * What apt's candidates depend on: the package lists, sources and preferences. Unchanged, the
 * candidates are too, so they are looked up once (apt-cache takes a second here: no pkgcache).
 */
const aptStateOf = (): string => {
  const entries = (dir: string) => {
    try {
      return readdirSync(dir).map((n) => join(dir, n));
    } catch {
      return [];
    }
  };
  const files = [
    ...entries('/var/lib/apt/lists'),
    ...entries('/etc/apt/sources.list.d'),
    ...entries('/etc/apt/preferences.d'),
    '/etc/apt/sources.list',
    '/etc/apt/preferences',
  ];
  return sha256(
    files
      .sort()
      .map((f) => {
        try {
          const s = statSync(f);
          return `${f} ${s.size} ${s.mtimeMs}`;
        } catch {
          return `${f} -`;
        }
      })
      .join('\n'),
  );
};

const show = async (names: readonly string[]) => {
  const r = await run('apt-cache', ['show', '--no-all-versions', ...names], { okCodes: [100] });
  const found = new Map(parseAptShow(r.stdout).map((d) => [d.name, d]));
  return names.map((n) => found.get(n));
};

/**
 * The candidate of each package, read again after `apt-get update` if the lists lack one;
 * remembered in `dir` for as long as apt's state is unchanged.
 */
export const resolveDebs = async (names: readonly string[], dir: string, log: Log): Promise<Deb[]> => {
  const memo = join(dir, `candidates-${sha256(`${aptStateOf()} ${names.join(' ')}`).slice(0, 16)}.json`);
  if (existsSync(memo)) return zMemo.parse(JSON.parse(readFileSync(memo, 'utf8')));
  let found = await show(names);
  if (found.some((d) => !d)) {
    log('Debian package lists are missing or stale; apt-get update');
    await run('apt-get', ['update', '-qq'], { log, retry: true });
    found = await show(names);
  }
  const debs = found.map((d, i) => {
    if (!d) throw new Error(`Debian offers no package ${names[i]} here (after apt-get update)`);
    return d;
  });
  await mkdir(dir, { recursive: true });
  for (const old of readdirSync(dir))
    if (old.startsWith('candidates-')) await rm(join(dir, old), { force: true });
  await writeFile(memo, JSON.stringify(debs));
  return debs;
};

/** The .deb in the download cache, fetched once and checked against the archive's SHA256. */
export const downloadDeb = async (deb: Deb, dir: string, log: Log): Promise<string> => {
  const file = join(dir, basename(deb.filename));
  if (existsSync(file) && sha256(readFileSync(file)) === deb.sha256) return file;
  const tmp = join(dir, `.download-${process.pid}-${deb.name}`);
  await mkdir(tmp, { recursive: true });
  try {
    log(`downloading ${deb.name} ${deb.version}`);
    await run('apt-get', ['download', '-qq', `${deb.name}=${deb.version}`], { cwd: tmp, retry: true });
    const got = join(tmp, basename(deb.filename));
    if (!existsSync(got))
      throw new Error(`apt-get download ${deb.name}=${deb.version} left no ${basename(got)}`);
    const sum = sha256(readFileSync(got));
    if (sum !== deb.sha256)
      throw new Error(`${basename(got)}: SHA256 ${sum}, the package list says ${deb.sha256}; not used`);
    await rename(got, file);
    return file;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
};
