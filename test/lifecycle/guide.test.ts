import { execFile } from 'node:child_process';
import { readdir, readFile, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHART_DIR } from '../../infra/helm/generate.ts';
import { splitImage } from '../../infra/helm/local/install.ts';
import { startTestbed } from '../../infra/testbed/testbed.ts';
import type { Testbed } from '../../infra/testbed/types.ts';
import { ensureImage } from '../../scripts/image/build.ts';
import { connectRedis } from '../../shared/redis/client.ts';
import { loadServerless } from '../../shared/runtime/config.ts';
import { type BlockRun, GuideBlockError, runBlocks, shellBlocks } from './guide-runner.ts';
import { NEXT_DESCRIPTION, nextChart, retagArchive } from './next-version.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const GUIDE = 'docs/guide.md';
const log = (m: string) => process.stderr.write(`${m}\n`);
const run = promisify(execFile);
const functions = Object.keys((await loadServerless(join(root, 'serverless.yml'))).functions);
/** What the guide's commands need besides kubectl and helm (the test bed's) and the CLI (the checkout's). */
const TOOLS = { curl: 'curl', openssl: 'openssl', jq: 'jq', base64: 'coreutils', od: 'coreutils' };

type Obj = {
  metadata: { name: string; uid: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec?: Record<string, unknown> & { template?: { spec?: { containers?: { image?: string }[] } } };
  status?: Record<string, unknown>;
};

/**
 * Issue 14 item 8: docs/guide.md, a user's way from `helm install` to `helm uninstall`, run as a
 * user runs it — every ```sh block, in order, in one shell, on a fresh test bed (bare: the guide
 * installs Tideway itself). The first block's placeholders are replaced by the test bed's values;
 * the blocks wait for what they need themselves, so each passes or fails on its own. Between and
 * after the blocks, the test checks from outside what the guide claims.
 */
describe('the user guide (docs/guide.md)', () => {
  let image = { repository: '', tag: '', next: '' };
  let images = '';
  let chart = '';

  beforeAll(async () => {
    const missing = [];
    for (const [tool, pkg] of Object.entries(TOOLS))
      if ((await run('bash', ['-c', `command -v ${tool}`]).catch(() => undefined)) === undefined)
        missing.push(`${tool} (apt-get install -y ${pkg})`);
    if (missing.length > 0) throw new Error(`the guide's commands need ${missing.join(', ')} on PATH`);
    // Tideway's image and chart, and as the version the guide upgrades to: the same image under
    // a second tag, and the chart with a changed CRD (next-version.ts).
    const built = await ensureImage({ root, log });
    const [repository, tag] = splitImage(built.image);
    image = { repository, tag, next: `${tag}-next` };
    images = await retagArchive(built.archive, `${repository}:${image.next}`);
    chart = await nextChart(CHART_DIR);
  }, 20 * 60_000);
  afterAll(async () => {
    for (const dir of [images, chart]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it(
    'works as written: install, cluster, scale, Redis upgrade, backups, schedule, restores (CLI, webhook), Tideway upgrade, uninstall',
    async () => {
      const blocks = shellBlocks(await readFile(join(root, GUIDE), 'utf8'));
      /** The one block that contains `pattern`: checks hang on it. */
      const blockWith = (pattern: RegExp) => {
        const found = blocks.filter((b) => pattern.test(b.text));
        expect(
          found.map((b) => b.line),
          `blocks of ${GUIDE} matching ${pattern}`,
        ).toHaveLength(1);
        return found[0]?.index ?? -1;
      };
      const install = blockWith(/^helm install /m);
      const scale = blockWith(/"replicas":3/);
      const upgrade = blockWith(/^helm upgrade /m);
      const uninstall = blockWith(/^helm uninstall /m);
      expect(install).toBeLessThan(upgrade);
      expect(upgrade).toBeLessThan(uninstall);

      await using bed = await startTestbed({ log, imageArchiveDirs: [images] });
      const kube = kubeOf(bed);
      const overrides: Record<string, string> = {
        TIDEWAY_CHART: CHART_DIR,
        TIDEWAY_IMAGE: image.repository,
        TIDEWAY_VERSION: image.tag,
        TIDEWAY_NEW_VERSION: image.next,
        NATS_URL: bed.natsUrl,
        // One NATS server on the test bed: one copy of each stream.
        NATS_REPLICAS: '1',
        S3_ENDPOINT: bed.s3.endpoint,
        S3_REGION: bed.s3.region,
        S3_BUCKET: bed.s3.bucket,
        S3_FORCE_PATH_STYLE: 'true',
        AWS_ACCESS_KEY_ID: bed.s3.accessKeyId,
        AWS_SECRET_ACCESS_KEY: bed.s3.secretAccessKey,
      };
      let redisPods: Record<string, string> = {};

      const after = async ({ block }: BlockRun): Promise<string | undefined> => {
        if (block.index === 1) {
          // Exactly the guide's settings are replaced: a new placeholder the test does not know
          // fails here, not as a pull of ghcr.io or a call to AWS somewhere later.
          const settings = [...block.text.matchAll(/^export ([A-Z_][A-Z0-9_]*)=/gm)].map((m) => m[1]);
          expect(settings.sort(), `the settings of ${GUIDE}'s first block`).toEqual(
            Object.keys(overrides).sort(),
          );
          return Object.entries(overrides)
            .map(([k, v]) => `export ${k}='${v.replaceAll("'", `'\\''`)}'`)
            .join('\n');
        }
        if (block.index === install) {
          const deployments = await kube.list('deployments', 'tideway-system');
          expect(deployments.map((d) => d.metadata.name).sort()).toEqual(
            functions.map((f) => `tideway-${f}`).sort(),
          );
          for (const d of deployments)
            expect(imageOf(d), d.metadata.name).toBe(`${image.repository}:${image.tag}`);
        }
        if (block.index === scale - 1 || block.index === upgrade - 1) redisPods = await podUids(kube);
        if (block.index === scale) {
          // Scaling up restarts nothing that runs.
          const now = await podUids(kube);
          expect(Object.keys(now)).toHaveLength(3);
          expect(now).toMatchObject(redisPods);
        }
        // "With the new version's chart checked out".
        if (block.index === upgrade - 1) return `export TIDEWAY_CHART='${chart}'`;
        if (block.index === upgrade) {
          // The new chart's CRDs took over from those helm installed.
          expect(
            await kube.kubectl(
              'get',
              'crd',
              'redisclusters.tideway.dev',
              '-o',
              'jsonpath={.spec.versions[0].schema.openAPIV3Schema.description}',
            ),
          ).toBe(NEXT_DESCRIPTION);
          for (const d of await kube.list('deployments', 'tideway-system')) {
            expect(imageOf(d), d.metadata.name).toBe(`${image.repository}:${image.next}`);
            expect(d.status?.updatedReplicas, d.metadata.name).toBe(d.spec?.replicas);
            expect(d.status?.readyReplicas, d.metadata.name).toBe(d.spec?.replicas);
          }
          // Tideway is not in Redis's data path: its upgrade restarts no Redis pod.
          expect(await podUids(kube)).toEqual(redisPods);
        }
        return undefined;
      };

      await runBlocks({
        blocks,
        file: GUIDE,
        cwd: root,
        env: {
          PATH: `${dirname(bed.kubectl)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
          HOME: process.env.HOME ?? '/root',
          KUBECONFIG: bed.kubeconfig,
          LANG: 'C.UTF-8',
        },
        // Longer than the longest wait of a block (10 min), so that the block's own wait fails first.
        timeoutMs: 11 * 60_000,
        after,
        log,
      }).catch(async (error: unknown) => {
        if (error instanceof GuideBlockError)
          error.message += `\n--- the test bed then ---\n${await diagnostics(bed, kube)}`;
        throw error;
      });

      // What the guide left behind: Tideway gone, its CRDs and the cluster (upgraded, scaled) there,
      // both restores Completed, scheduled backups, and the data as restored.
      const helm = await run(join(dirname(bed.kubectl), 'helm'), ['list', '-A', '-q'], {
        env: { ...process.env, KUBECONFIG: bed.kubeconfig },
      });
      expect(helm.stdout.trim()).toBe('');
      expect(await kube.list('deployments', 'tideway-system')).toEqual([]);
      const [cache] = await kube.list('redisclusters', 'demo');
      expect(cache?.spec).toMatchObject({ version: '7.0', replicas: 3 });
      expect(cache?.status).toMatchObject({ version: '7.0.15', readyReplicas: 3, phase: 'Ready' });
      const restores = await kube.list('restores', 'demo');
      expect(
        restores.map((r) => ({
          by: r.metadata.labels?.['tideway.dev/requested-by'] ?? 'cli',
          source: r.spec?.source,
          phase: r.status?.phase,
        })),
      ).toEqual(
        expect.arrayContaining([
          { by: 'cli', source: { backup: { name: 'before-upgrade' } }, phase: 'Completed' },
          { by: 'webhook', source: { latest: true }, phase: 'Completed' },
        ]),
      );
      expect(restores).toHaveLength(2);
      const scheduled = (await kube.list('backups', 'demo')).filter(
        (b) => b.metadata.labels?.['tideway.dev/schedule'] === 'cache-backups',
      );
      expect(scheduled.filter((b) => b.status?.phase === 'Completed').length).toBeGreaterThan(0);
      const master = (await kube.list('pods', 'demo')).find((p) => p.metadata.name === cache?.status?.master);
      const password = Buffer.from(
        (await kube.get('secret', 'demo', 'cache-auth')).data?.password ?? '',
        'base64',
      ).toString();
      using redis = await connectRedis({
        host: String(master?.status?.podIP ?? ''),
        port: 6379,
        password,
      });
      expect(await redis.command('GET', 'greeting')).toBe('hello');
    },
    25 * 60_000,
  );
});

const imageOf = (o: Obj) => o.spec?.template?.spec?.containers?.[0]?.image;

const kubeOf = (bed: Testbed) => {
  const kubectl = async (...args: string[]) =>
    (
      await run(bed.kubectl, args, {
        env: { ...process.env, KUBECONFIG: bed.kubeconfig },
        maxBuffer: 64 << 20,
      })
    ).stdout;
  return {
    kubectl,
    list: async (kind: string, namespace: string): Promise<Obj[]> =>
      (JSON.parse(await kubectl('get', kind, '-n', namespace, '-o', 'json')) as { items: Obj[] }).items,
    get: async (kind: string, namespace: string, name: string) =>
      JSON.parse(await kubectl('get', kind, name, '-n', namespace, '-o', 'json')) as Obj & {
        data?: Record<string, string>;
      },
  };
};

/** The Redis pods of the guide's cluster, by name, with their uids (a restarted pod has a new one). */
const podUids = async (kube: ReturnType<typeof kubeOf>) =>
  Object.fromEntries(
    (await kube.list('pods', 'demo'))
      .filter((p) => p.metadata.labels?.['app.kubernetes.io/instance'] === 'cache')
      .map((p) => [p.metadata.name, p.metadata.uid]),
  );

/** What a failed block leaves to look at: the objects, and the end of every container's log. */
const diagnostics = async (bed: Testbed, kube: ReturnType<typeof kubeOf>) => {
  const parts = [
    await kube
      .kubectl(
        'get',
        'redisclusters,backups,backupschedules,restores,jobs,deployments,pods',
        '-A',
        '-o',
        'wide',
      )
      .catch((e: unknown) => String(e)),
  ];
  const pods = await kube.list('pods', 'demo').catch(() => []);
  const system = await kube.list('pods', 'tideway-system').catch(() => []);
  const byUid = new Map([...pods, ...system].map((p) => [p.metadata.uid, p.metadata.name]));
  const dir = join(bed.dir, 'node', 'pods');
  for (const uid of await readdir(dir).catch(() => [])) {
    const name = byUid.get(uid);
    if (!name) continue;
    for (const file of (await readdir(join(dir, uid)).catch(() => [])).filter((f) => f.endsWith('.log'))) {
      const lines = (await readFile(join(dir, uid, file), 'utf8').catch(() => '')).trimEnd().split('\n');
      parts.push(`--- ${name}/${file} (last 15 lines) ---\n${lines.slice(-15).join('\n')}`);
    }
  }
  return parts.join('\n');
};
