import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1ContainerStateTerminated, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureImage } from '../../scripts/image/build.ts';
import { bed, createNamespace, until } from '../support/bed.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * Runs inside Tideway's image (node, no shell) and reports what the container sees as JSON on
 * its termination log: who and where it is, its environment, its volumes, and what the API
 * server says the mounted token is.
 */
const REPORT = `
const fs = require('node:fs');
const https = require('node:https');
const attempt = (f) => { try { f(); return 'ok'; } catch (e) { return e.code; } };
const read = (p) => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return e.code; } };
const token = read('${SA_DIR}/token');
const report = (user) => fs.writeFileSync('/dev/termination-log', JSON.stringify({
  cwd: process.cwd(), uid: process.getuid(), gid: process.getgid(),
  hostname: require('node:os').hostname(), hosts: read('/etc/hosts').split('\\n').slice(-2)[0],
  imageEnv: process.env.TIDEWAY_SERVERLESS, home: process.env.HOME, podEnv: process.env.FROM_POD,
  config: read('/etc/tw/config/greeting'), secret: read('/etc/tw/secret/password'),
  namespace: read('${SA_DIR}/namespace'), tokenParts: token.split('.').length, user,
  writeRoot: attempt(() => fs.writeFileSync('/written', 'x')),
  writeTmp: attempt(() => fs.writeFileSync('/tmp/written', 'x')),
  writeApp: attempt(() => fs.writeFileSync('/app/package.json', 'x')),
}));
const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
const req = https.request({
  host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT,
  path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', method: 'POST',
  ca: read('${SA_DIR}/ca.crt'),
  headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
}, (res) => {
  let data = '';
  res.on('data', (c) => { data += c; });
  res.on('end', () => report(JSON.parse(data).status?.userInfo?.username ?? data));
});
// Without a token or CA (no volume) the call fails; the rest is still reported.
req.on('error', (e) => report('api: ' + e.message));
req.end(body);
`;

type Report = {
  cwd: string;
  uid: number;
  gid: number;
  hostname: string;
  hosts: string;
  imageEnv: string;
  home: string;
  podEnv: string;
  config: string;
  secret: string;
  namespace: string;
  tokenParts: number;
  user: string;
  writeRoot: string;
  writeTmp: string;
  writeApp: string;
};

/**
 * The test bed runs Tideway's image from its own file system: layers unpacked into a root, the
 * image config's entrypoint, working directory, user and environment, the pod's overrides, its
 * volumes (the projected service-account token included) and a read-only root when asked.
 */
describe("Tideway's image on the test bed's node", () => {
  const b = bed();
  let ns = '';
  let image = '';

  const finished = (name: string) =>
    until(
      `${name} to finish`,
      async () => {
        const p = await b.core.readNamespacedPod({ namespace: ns, name });
        const t = p.status?.containerStatuses?.[0]?.state?.terminated;
        return t && (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') ? t : undefined;
      },
      240_000, // the first pod also waits for the image to be unpacked
    );
  const runPod = async (name: string, spec: Partial<V1PodSpec>): Promise<V1ContainerStateTerminated> => {
    await b.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          ...spec,
          containers: (spec.containers ?? []).map((c) => ({ image, ...c })),
        },
      },
    });
    return finished(name);
  };
  const reportOf = (t: V1ContainerStateTerminated): Report => {
    expect(t.exitCode, t.message).toBe(0);
    return JSON.parse(t.message ?? '') as Report;
  };
  const reporter = (extra: Partial<V1PodSpec['containers'][number]> = {}) => ({
    name: 'main',
    command: ['node', '-e', REPORT],
    env: [{ name: 'FROM_POD', value: 'pod value' }],
    volumeMounts: [
      { name: 'config', mountPath: '/etc/tw/config' },
      { name: 'secret', mountPath: '/etc/tw/secret' },
    ],
    ...extra,
  });
  const reporterVolumes = [
    { name: 'config', configMap: { name: 'greeting' } },
    { name: 'secret', secret: { secretName: 'password' } },
  ];

  beforeAll(async () => {
    image = (await ensureImage({ root: ROOT, log: (m) => process.stderr.write(`[image] ${m}\n`) })).image;
    ns = await createNamespace(b.core, 'image');
    await b.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'greeting' }, data: { greeting: 'hello from a ConfigMap' } },
    });
    await b.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'password' }, stringData: { password: 's3cret' } },
    });
    // The default ServiceAccount and kube-root-ca.crt come from the controller-manager.
    await until('the namespace to have its default ServiceAccount and root CA', async () => {
      const sa = await b.core
        .readNamespacedServiceAccount({ namespace: ns, name: 'default' })
        .catch(() => undefined);
      const ca = await b.core
        .readNamespacedConfigMap({ namespace: ns, name: 'kube-root-ca.crt' })
        .catch(() => undefined);
      return sa && ca ? true : undefined;
    });
  }, 600_000);

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it("runs the pod's command as the image's user, in its WorkingDir and environment, on a read-only root", async () => {
    const r = reportOf(
      await runPod('read-only', {
        containers: [
          reporter({ securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false } }),
        ],
        volumes: reporterVolumes,
      }),
    );
    expect(r).toMatchObject({
      cwd: '/app', // the image's WorkingDir
      uid: 65532, // the image's User 65532:65532
      gid: 65532,
      imageEnv: '/app/serverless.yml', // the image's Env ...
      home: '/tmp',
      podEnv: 'pod value', // ... then the pod's
      hostname: 'read-only',
      config: 'hello from a ConfigMap',
      secret: 's3cret',
      namespace: ns,
      tokenParts: 3, // a JWT
      user: `system:serviceaccount:${ns}:default`, // the API server accepts the mounted token
      writeRoot: 'EROFS',
      writeTmp: 'EROFS', // /tmp as the image has it: part of the read-only root
      writeApp: 'EROFS',
    });
    expect(r.hosts).toMatch(/^\d+\.\d+\.\d+\.\d+\tread-only$/);
    // The token came as on a real cluster: the API server's ServiceAccount admission named the
    // default account and added the kube-api-access volume; the pod asked for neither.
    const admitted = await b.core.readNamespacedPod({ namespace: ns, name: 'read-only' });
    expect(admitted.spec?.serviceAccountName).toBe('default');
    expect(admitted.spec?.volumes?.map((v) => v.name)).toContainEqual(
      expect.stringMatching(/^kube-api-access-/),
    );
  });

  it('mounts no token in a pod that opts out (automountServiceAccountToken: false)', async () => {
    const r = reportOf(
      await runPod('no-token', {
        automountServiceAccountToken: false,
        containers: [reporter()],
        volumes: reporterVolumes,
      }),
    );
    expect(r).toMatchObject({ tokenParts: 1, namespace: 'ENOENT' });
  });

  it('lets the pod override the working directory and user, on a writable root of its own', async () => {
    const r = reportOf(
      await runPod('overrides', {
        securityContext: { runAsUser: 1000, runAsGroup: 2000, runAsNonRoot: true },
        containers: [reporter({ workingDir: '/tmp' })],
        volumes: reporterVolumes,
      }),
    );
    expect(r).toMatchObject({
      cwd: '/tmp',
      uid: 1000,
      gid: 2000,
      writeRoot: 'EACCES', // writable root, but / belongs to root
      writeTmp: 'ok', // the image's /tmp is 1777
      writeApp: 'EACCES', // the image's files stay root's
    });
  });

  it("refuses a root user under runAsNonRoot with kubelet's reason", async () => {
    await b.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'as-root' },
        spec: {
          restartPolicy: 'Never',
          securityContext: { runAsNonRoot: true },
          containers: [
            { name: 'main', image, command: ['node', '-e', '0'], securityContext: { runAsUser: 0 } },
          ],
        },
      },
    });
    const waiting = await until('as-root to be refused', async () => {
      const p: V1Pod = await b.core.readNamespacedPod({ namespace: ns, name: 'as-root' });
      return p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError'
        ? p.status.containerStatuses[0]?.state?.waiting
        : undefined;
    });
    expect(waiting?.message).toBe("container's runAsUser breaks non-root policy");
  });

  it("runs the image's entrypoint with a function as its argument: the worker checks its identity in the cluster", async () => {
    const t = await runPod('health', {
      containers: [
        {
          name: 'health',
          args: ['health'],
          env: [{ name: 'NATS_URL', value: 'nats://192.0.2.1:4222' }],
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
      ],
    });
    // worker.ts found /app/serverless.yml from the image's env, loaded the health function,
    // asked the API server (through the kubernetes Service, with the mounted token and CA) who
    // it is, and refused to run as anything but its own ServiceAccount: exit 78.
    expect(t.exitCode).toBe(78);
    expect(t.message).toContain(`runs as ServiceAccount ${ns}/default, not its own (tideway-health`);
  });
});
