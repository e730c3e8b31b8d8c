import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ArchivedImage, OciArchive } from '../../infra/testbed/image-table/archive.ts';
import { unpackImage } from '../../infra/testbed/image-table/unpack.ts';
import { loadServerless, nodeArgsFor } from '../../shared/runtime/config.ts';
import { loadExport, loadFailureStatus, loadLockKey } from '../../shared/runtime/load-handler.ts';
import { type BuiltImage, ensureImage, IMAGE_REPO } from './build.ts';
import { imagePathOf } from './compile.ts';
import { parseLock } from './deps.ts';
import { selectImageFiles } from './inputs.ts';
import { IMAGE_UID, nodeVersionOf } from './pins.ts';
import { runInImage } from './sandbox.ts';

// The image `npm run image` makes, opened as a runtime would (index.json → manifest → config,
// layers unpacked) and run without a container runtime: its own Node on its own root, read-only,
// as its user. Builds the image when this checkout has none yet (about a minute, cached).
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );

/** Installed packages (paths like node_modules/@scope/name), nested node_modules included. */
const packagesUnder = (dir: string, base: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .flatMap((e) =>
      e.name.startsWith('@') ? readdirSync(join(dir, e.name)).map((n) => join(e.name, n)) : [e.name],
    )
    .flatMap((name) => {
      const pkg = join(dir, name);
      const nested = join(pkg, 'node_modules');
      return [
        relative(base, pkg),
        ...(statSync(nested, { throwIfNoEntry: false })?.isDirectory() ? packagesUnder(nested, base) : []),
      ];
    });

describe('the image archive', () => {
  let tmp = '';
  let built: BuiltImage;
  let image: ArchivedImage;
  let rootfs = '';
  const cfg = () => image.config;
  const entrypoint = () => [...cfg().entrypoint];

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('this test needs root (podman builds, mount namespaces)');
    built = await ensureImage({ root: ROOT, log: () => {} });
    tmp = await mkdtemp(join(tmpdir(), 'tideway-image-'));
    // The test bed's reader and unpacker: every blob checked by digest, each layer by diff_id.
    const archive = await OciArchive.open(built.archive);
    try {
      const images = await archive.images();
      expect(images).toHaveLength(1);
      image = images[0] as ArchivedImage;
      rootfs = join(tmp, 'root');
      await unpackImage(archive, image, rootfs);
    } finally {
      await archive.close();
    }
  }, 900_000);
  afterAll(() => (tmp ? rm(tmp, { recursive: true, force: true }) : undefined));

  it('is named by its key, for this machine', () => {
    expect(built.archive).toMatch(/\/images\/tideway\/tideway-[0-9a-f]{12}\.oci\.tar$/);
    expect(image.ref).toBe(`${IMAGE_REPO}:${built.key.slice(0, 12)}`);
    expect(image.platform.os).toBe('linux');
    expect(image.platform.architecture).toBe(process.arch === 'x64' ? 'amd64' : process.arch);
  });

  it('runs one function in the process as a numeric non-root user from /app; the function is the argument', () => {
    expect(cfg().user).toBe(`${IMAGE_UID}:${IMAGE_UID}`);
    expect(cfg().workingDir).toBe('/app');
    expect(cfg().entrypoint).toEqual([
      'node',
      '--no-experimental-strip-types',
      '/app/shared/runtime/worker.js',
    ]);
    expect(cfg().cmd).toEqual([]);
  });

  it('has exactly its own environment: nothing of the build machine, no secret', () => {
    expect(cfg().env).toEqual([
      'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      'NODE_ENV=production',
      'HOME=/tmp',
      'npm_config_cache=/tmp/.npm',
      'TIDEWAY_SERVERLESS=/app/serverless.yml',
    ]);
    for (const [k, v] of Object.entries(image.labels))
      expect(`${k}=${v}`).not.toMatch(/secret|token|password|key=/i);
  });

  it("holds Node of scripts/node24.sh's version, which runs on the image's own libraries", async () => {
    const r = await runInImage({ root: rootfs, config: cfg(), argv: ['node', '--version'] });
    expect(r).toMatchObject({ code: 0, stdout: `v${nodeVersionOf(ROOT)}\n` });
  });

  it('holds exactly the selected files of the checkout under /app, the code as JavaScript, owned by root, and no test', () => {
    const app = join(rootfs, 'app');
    const files = filesUnder(app)
      .map((f) => relative(app, f))
      .filter((f) => !f.startsWith('node_modules/'));
    expect(files.sort()).toEqual(selectImageFiles(ROOT).map(imagePathOf).sort());
    for (const f of filesUnder(app)) {
      const s = statSync(f);
      expect({ f, uid: s.uid, worldWritable: (s.mode & 0o002) !== 0 }).toEqual({
        f,
        uid: 0,
        worldWritable: false,
      });
    }
  });

  it("holds the lock's production packages at their locked versions and no dev package", () => {
    const lock = parseLock(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'), 'package-lock.json');
    const app = join(rootfs, 'app');
    const installed = packagesUnder(join(app, 'node_modules'), app).sort();
    const production = Object.entries(lock.packages)
      .filter(([p, e]) => p.startsWith('node_modules/') && !e.dev && !e.optional && !e.devOptional)
      .map(([p]) => p)
      .sort();
    expect(installed).toEqual(production);
    for (const p of production) {
      const pkg = JSON.parse(readFileSync(join(app, p, 'package.json'), 'utf8')) as { version: string };
      expect(`${p}@${pkg.version}`).toBe(`${p}@${lock.packages[p]?.version}`);
    }
    for (const dev of ['vitest', 'typescript', '@biomejs/biome']) {
      expect(lock.packages[`node_modules/${dev}`]?.dev).toBe(true);
      expect(installed).not.toContain(`node_modules/${dev}`);
    }
  });

  it('loads every function of its serverless.yml as its user on a read-only root, writing nothing, with no TypeScript', async () => {
    const file = join(ROOT, 'serverless.yml');
    const config = await loadServerless(file);
    const expected: Record<string, { entry: string; lockKey: string; failureStatus: string }> = {};
    for (const [name, fn] of Object.entries(config.functions))
      expected[name] = {
        entry: typeof (await loadExport(file, fn.handler)),
        lockKey: typeof (await loadLockKey(file, fn.handler)),
        failureStatus: typeof (await loadFailureStatus(file, fn.handler)),
      };
    // The image's runtime reports a Backup it gave up on as Failed: its hook is there.
    expect(expected.backup?.failureStatus).toBe('function');
    const probe = `
      import { writeFileSync } from 'node:fs';
      import { loadServerless } from '/app/shared/runtime/config.js';
      import { loadExport, loadFailureStatus, loadLockKey } from '/app/shared/runtime/load-handler.js';
      const file = process.env.TIDEWAY_SERVERLESS;
      const functions = {};
      for (const [name, fn] of Object.entries((await loadServerless(file)).functions))
        functions[name] = { entry: typeof (await loadExport(file, fn.handler)), lockKey: typeof (await loadLockKey(file, fn.handler)), failureStatus: typeof (await loadFailureStatus(file, fn.handler)) };
      // What the worker loads only for event functions.
      await import('/app/shared/runtime/consumer.js');
      const { KubeConfig } = await import('@kubernetes/client-node');
      const writes = ['/app/x', '/x', '/tmp/x'].map((p) => { try { writeFileSync(p, 'x'); return 'written'; } catch (e) { return e.code; } });
      // Schedules use time zones: Node's own ICU data, no tzdata package.
      const tz = new Intl.DateTimeFormat('en-GB', { timeZone: 'Asia/Kolkata', timeStyle: 'short' }).format(new Date(0));
      process.stdout.write(JSON.stringify({ functions, kube: typeof KubeConfig, writes, uid: process.getuid(), cwd: process.cwd(), tz }));
    `;
    const r = await runInImage({
      root: rootfs,
      config: cfg(),
      // As the entrypoint runs: Node's type stripper off, so a .ts module anywhere would fail here.
      argv: ['node', '--no-experimental-strip-types', '--input-type=module', '-e', probe],
    });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      functions: expected,
      kube: 'function',
      writes: ['EROFS', 'EROFS', 'EROFS'],
      uid: IMAGE_UID,
      cwd: '/app',
      tz: '05:30',
    });
  });

  it('is read-only for root too: the probe above could not have written anywhere', async () => {
    const write = `try { require('node:fs').writeFileSync('/app/x', 'x'); console.log('written') } catch (e) { console.log(e.code) }`;
    const r = await runInImage({ root: rootfs, config: cfg(), user: '0', argv: ['node', '-e', write] });
    expect(r.stdout).toBe('EROFS\n');
  });

  it("takes a function's memorySize as NODE_OPTIONS (in-process, no supervisor to pass Node flags)", async () => {
    const heapMiB = `console.log(Math.round(require('node:v8').getHeapStatistics().heap_size_limit / 2 ** 20))`;
    const limited = await runInImage({
      root: rootfs,
      config: cfg(),
      env: { NODE_OPTIONS: nodeArgsFor({ memorySize: 256 }).join(' ') },
      argv: ['node', '-e', heapMiB],
    });
    const free = await runInImage({ root: rootfs, config: cfg(), argv: ['node', '-e', heapMiB] });
    expect(limited.code).toBe(0);
    // Half of memorySize for the old space, plus the young generation.
    expect(Number(limited.stdout)).toBeGreaterThanOrEqual(128);
    expect(Number(limited.stdout)).toBeLessThan(160);
    expect(Number(free.stdout)).toBeGreaterThan(512);
  });

  it('starts its entrypoint: without a function it prints the usage, without NATS_URL it names it', async () => {
    const bare = await runInImage({ root: rootfs, config: cfg(), argv: entrypoint() });
    expect(bare).toMatchObject({ code: 64, stderr: 'usage: worker.ts <function>\n' });
    const noBus = await runInImage({ root: rootfs, config: cfg(), argv: [...entrypoint(), 'reconcile'] });
    expect(noBus.code).toBe(78);
    expect(JSON.parse(noBus.stderr)).toMatchObject({ msg: 'bad environment', function: 'reconcile' });
    expect(noBus.stderr).toContain('NATS_URL');
  });
});
