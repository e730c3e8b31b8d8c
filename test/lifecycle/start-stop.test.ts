import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findLeftovers } from '../../infra/testbed/inspect.ts';
import { until } from '../../infra/testbed/wait.ts';
import { signedHeaders } from '../webhook/support.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const envFile = join(root, '.tideway', 'local', 'env');
/** Function processes still running, with parent and age: none may outlive what started them. */
const workers = () =>
  readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
        if (!args.includes('shared/runtime/worker.ts')) return [];
        const ppid = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1];
        return [`${pid} ${ppid} ${args}`];
      } catch {
        return []; // exited while we looked
      }
    });
const ipForward = () => readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim();

/**
 * Runs `npm start` (scripts/start.ts with `args`) until `body` is done, then Ctrl-C: it must be
 * gone within 15 s with nothing left behind (issue 14).
 */
const runStart = async (args: readonly string[], body: (sh: (cmd: string) => string) => Promise<void>) => {
  const forwardBefore = ipForward();
  const child = spawn(process.execPath, [join(root, 'scripts', 'start.ts'), ...args], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  try {
    await until('the env file', async () => (existsSync(envFile) ? true : undefined), 600_000, 500).catch(
      (error: unknown) => {
        throw new Error(`${String(error)}\n${stderr.slice(-3000)}`);
      },
    );
    /** A command in a shell that sourced the env file, as the README says to. */
    const sh = (cmd: string) =>
      execFileSync('bash', ['-c', `. '${envFile}' && ${cmd}`], { encoding: 'utf8' }).trim();
    await body(sh);
  } finally {
    const stopAt = performance.now();
    child.kill('SIGINT');
    expect(await exited, stderr.slice(-2000)).toBe(0);
    // Issue 14: gone within 15 s of Ctrl-C, functions (grace 10 s) and the test bed.
    expect(performance.now() - stopAt, stderr.slice(-2000)).toBeLessThan(15_000);
  }
  expect(existsSync(envFile)).toBe(false);
  // The functions' ServiceAccount tokens go with the cluster, and the CLI's links with the file.
  expect(existsSync(join(root, '.tideway', 'local', 'kube'))).toBe(false);
  expect(existsSync(join(root, '.tideway', 'local', 'bin'))).toBe(false);
  expect(await findLeftovers()).toEqual([]);
  expect(workers()).toEqual([]);
  expect(ipForward()).toBe(forwardBefore);
};

/** The webhook answers where the env file says, and refuses what is not signed. */
const expectWebhook = async (sh: (cmd: string) => string) => {
  const hookUrl = sh('printf %s "$TIDEWAY_WEBHOOK_URL"');
  expect((await fetch(`${hookUrl}/healthz`)).status).toBe(200);
  const unsigned = await fetch(`${hookUrl}/v1/namespaces/default/redisclusters/x/backup`, {
    method: 'POST',
    body: '{}',
  });
  expect(unsigned.status).toBe(401);
  // The secret written for the user signs requests the webhook takes, and is the Secret's.
  const secret = sh('printf %s "$TIDEWAY_WEBHOOK_SECRET"');
  expect(sh('kubectl -n default get secret tideway-webhook -o jsonpath={.data.secret} | base64 -d')).toBe(
    secret,
  );
  const body = '{}';
  const signed = await fetch(`${hookUrl}/v1/namespaces/default/redisclusters/x/backup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signedHeaders(secret, body) },
    body,
  });
  // Past the signature: the cluster is what is missing.
  expect({ status: signed.status, body: await signed.json() }).toMatchObject({
    status: 404,
    body: { error: { code: 'ClusterNotFound' } },
  });
};

// Runs after the e2e suite (a separate vitest invocation, see scripts/test.ts), so its first
// check is that the suite's test bed left nothing behind.
describe('test bed lifecycle', () => {
  it('left nothing behind after the e2e suite', async () => {
    expect(await findLeftovers()).toEqual([]);
    expect(workers()).toEqual([]);
  });

  it('npm start writes the env file when ready, and Ctrl-C stops everything', async () => {
    await runStart([], async (sh) => {
      const env = readFileSync(envFile, 'utf8');
      for (const key of [
        'KUBECONFIG',
        'PATH',
        'NATS_URL',
        'S3_ENDPOINT',
        'S3_BUCKET',
        'S3_ACCESS_KEY_ID',
        'S3_SECRET_ACCESS_KEY',
        'TIDEWAY_WEBHOOK_URL',
        'TIDEWAY_WEBHOOK_SECRET',
      ]) {
        expect(env).toContain(`export ${key}=`);
      }
      await expectWebhook(sh);
      // The file is usable as documented: source it, then kubectl, helm and the CLI are there.
      expect(sh('kubectl get nodes -o name')).toBe('node/tideway-node-0');
      expect(sh('helm version --short')).toMatch(/^v3\./);
      expect(sh('kubectl tideway version')).toMatch(/^tideway \d/);
      // The operator runs: the CRDs are served and a watcher replica holds its Lease.
      expect(sh('kubectl get crd redisclusters.tideway.dev -o name')).toBe(
        'customresourcedefinition.apiextensions.k8s.io/redisclusters.tideway.dev',
      );
      await until(
        'the watcher leads',
        async () =>
          sh(
            'kubectl -n tideway-system get lease tideway-watcher -o jsonpath={.spec.holderIdentity} 2>/dev/null || true',
          ) || undefined,
        60_000,
        500,
      );
      // Work in flight when Ctrl-C comes: a cluster being created.
      sh(
        `printf '%s' '{"apiVersion":"tideway.dev/v1alpha1","kind":"RedisCluster","metadata":{"name":"inflight","namespace":"default"},"spec":{"replicas":3}}' | kubectl apply -f -`,
      );
      await until(
        'its StatefulSet',
        async () => sh('kubectl get statefulset inflight -o name 2>/dev/null || true') || undefined,
        60_000,
        200,
      );
    });
  });

  it('npm start -- --chart installs Tideway with helm: the functions are pods from its image', async () => {
    await runStart(['--chart'], async (sh) => {
      expect(sh('helm list -n tideway-system -q')).toBe('tideway');
      expect(sh('command -v tideway kubectl-tideway').split('\n')).toHaveLength(2);
      expect(sh('kubectl tideway version')).toMatch(/^tideway \d/);
      const images = sh(
        'kubectl -n tideway-system get pods -l app.kubernetes.io/instance=tideway -o jsonpath=\'{range .items[*]}{.status.containerStatuses[0].imageID}{"\\n"}{end}\'',
      ).split('\n');
      expect(images.length).toBeGreaterThan(0);
      for (const id of images) expect(id).toMatch(/^localhost\/tideway@sha256:/);
      await expectWebhook(sh);
      // The main job, done by the pods: a cluster applied with kubectl becomes Ready.
      sh(
        `printf '%s' '{"apiVersion":"tideway.dev/v1alpha1","kind":"RedisCluster","metadata":{"name":"first","namespace":"default"},"spec":{"replicas":1}}' | kubectl apply -f -`,
      );
      await until(
        'RedisCluster first Ready',
        async () =>
          sh('kubectl get rediscluster first -o jsonpath={.status.phase} 2>/dev/null || true') === 'Ready'
            ? true
            : undefined,
        240_000,
        1000,
      );
    });
  });
});
