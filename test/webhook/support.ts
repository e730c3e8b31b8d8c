import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { writeFunctionKubeconfig } from '../../infra/rbac/credentials.ts';
import { freePort } from '../../infra/testbed/process/ports.ts';
import type { Backup, Restore } from '../../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { type bed, until } from '../support/bed.ts';
import { SERVERLESS } from '../support/redis.ts';

type Bed = ReturnType<typeof bed>;
const WORKER = join(
  resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'),
  'shared',
  'runtime',
  'worker.ts',
);

export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * Standard Webhooks headers for `body`, computed here with node:crypto (not with the server's
 * code): HMAC-SHA256 of "<id>.<timestamp>.<body>" with the base64 key of the whsec_ secret.
 */
export const signedHeaders = (
  secret: string,
  body: string | Uint8Array,
  o: { id?: string; timestamp?: number } = {},
): Record<string, string> => {
  const id = o.id ?? `msg_${randomUUID()}`;
  const ts = String(o.timestamp ?? Math.floor(Date.now() / 1000));
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${mac}` };
};

export type Reply = { status: number; headers: Headers; text: string; json: unknown };

export type WebhookServer = {
  readonly url: string;
  readonly output: () => string;
  /** A request; bodies as given (strings are sent verbatim, so what is signed is what is sent). */
  send(
    method: string,
    path: string,
    o?: { body?: string | Uint8Array; headers?: Record<string, string> },
  ): Promise<Reply>;
  /** POST or GET signed with `secret`. */
  signed(
    method: 'POST' | 'GET',
    path: string,
    secret: string,
    o?: { body?: string; id?: string; timestamp?: number; headers?: Record<string, string> },
  ): Promise<Reply>;
  stop(): Promise<void>;
};

/**
 * Replicas of the product's webhook function (serverless.yml), as its own ServiceAccount, sharing
 * one port as `npm start` runs them. Logs at info (request lines included) are kept in full, so
 * tests can check what they do and do not contain.
 */
export const startWebhook = async (
  b: Bed,
  o: { namespace?: string; replicas?: number; port?: number; env?: Record<string, string> } = {},
): Promise<WebhookServer> => {
  const admin = new KubeConfig();
  admin.loadFromFile(b.info.kubeconfig);
  const port = o.port ?? (await freePort());
  const kubeconfig = await writeFunctionKubeconfig({
    admin,
    fn: 'webhook',
    dir: join(b.info.dir, 'function-credentials', `webhook-${port}`),
  });
  let output = '';
  const children: ChildProcess[] = [];
  for (let r = 0; r < (o.replicas ?? 1); r++) {
    const child = spawn(process.execPath, [WORKER, 'webhook'], {
      env: {
        ...process.env,
        NATS_URL: b.info.natsUrl,
        KUBECONFIG: kubeconfig,
        TIDEWAY_SERVERLESS: SERVERLESS,
        TIDEWAY_REPLICA: String(r),
        TIDEWAY_LOG_LEVEL: 'info',
        TIDEWAY_SUPERVISOR_PID: String(process.pid),
        TIDEWAY_WEBHOOK_HOST: '127.0.0.1',
        TIDEWAY_WEBHOOK_PORT: String(port),
        ...(o.namespace ? { TIDEWAY_WATCH_NAMESPACE: o.namespace } : {}),
        ...o.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (d: Buffer) => {
      output += d.toString();
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    children.push(child);
  }
  const url = `http://127.0.0.1:${port}`;
  const send: WebhookServer['send'] = async (method, path, x = {}) => {
    const res = await fetch(url + path, {
      method,
      headers: x.headers ?? {},
      ...(x.body === undefined ? {} : { body: x.body }),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
  // Every replica logs when it listens; all must, or some requests would find no one.
  await until(
    'the webhook replicas listen',
    async () => {
      const listening = output.split('\n').filter((l) => l.includes('"webhook listening"')).length;
      if (children.some((c) => c.exitCode !== null)) throw new Error(`a webhook replica exited:\n${output}`);
      return listening >= children.length && (await send('GET', '/readyz')).status === 200 ? true : undefined;
    },
    60_000,
    200,
  );
  return {
    url,
    output: () => output,
    send,
    signed: (method, path, secret, x = {}) => {
      const body = x.body ?? '';
      return send(method, path, {
        ...(method === 'POST' ? { body } : {}),
        headers: {
          'content-type': 'application/json',
          ...signedHeaders(secret, body, {
            ...(x.id ? { id: x.id } : {}),
            ...(x.timestamp ? { timestamp: x.timestamp } : {}),
          }),
          ...x.headers,
        },
      });
    },
    stop: async () => {
      await Promise.all(
        children.map(async (c) => {
          if (c.exitCode !== null || c.signalCode !== null) return;
          const exited = once(c, 'exit');
          c.kill('SIGTERM');
          await exited;
        }),
      );
    },
  };
};

/** The test bed's objects of one namespace, as a user with kubectl would make them. */
export const fixtures = (b: Bed, namespace: string) => {
  const create = (
    kind: keyof typeof TIDEWAY_KINDS,
    name: string,
    spec: Record<string, unknown>,
    labels: Record<string, string> = {},
  ) =>
    b.custom.createNamespacedCustomObject({
      ...TIDEWAY_KINDS[kind],
      namespace,
      body: { apiVersion: 'tideway.dev/v1alpha1', kind, metadata: { name, labels }, spec },
    });
  const setStatus = (plural: string, name: string, status: Record<string, unknown>) =>
    b.kubectl(
      'patch',
      `${plural}.tideway.dev`,
      name,
      '-n',
      namespace,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    );
  const list = async <T>(kind: 'Restore' | 'Backup') =>
    ((await b.custom.listNamespacedCustomObject({ ...TIDEWAY_KINDS[kind], namespace })) as { items: T[] })
      .items;
  return {
    secret: (value: string) =>
      b.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: 'tideway-webhook' }, stringData: { secret: value } },
      }),
    /** A RedisCluster object (nothing reconciles it here: the webhook only reads it), with a backup store. */
    cluster: (name: string, o: { store?: boolean } = {}) =>
      create('RedisCluster', name, {
        version: '7.0',
        replicas: 1,
        ...(o.store === false
          ? {}
          : {
              backup: {
                store: { s3: { bucket: 'backups', credentialsSecret: { name: 's3-creds' } } },
              },
            }),
      }),
    /** A Backup of `cluster` in `phase` (written as the backup function would). */
    backup: async (
      name: string,
      cluster: string,
      phase?: 'Completed' | 'Running' | 'Failed',
      labels: Record<string, string> = {},
      kind?: 'EtcdCluster',
    ) => {
      await create('Backup', name, { cluster: { name: cluster, ...(kind ? { kind } : {}) } }, labels);
      if (phase) await setStatus('backups', name, { phase });
    },
    setStatus,
    restores: () => list<Restore>('Restore'),
    backups: () => list<Backup>('Backup'),
    /** Names of every Restore and Backup in the namespace. */
    objects: async () => [
      ...(await list<Restore>('Restore')).map((r) => `Restore/${r.metadata.name}`),
      ...(await list<Backup>('Backup')).map((x) => `Backup/${x.metadata.name}`),
    ],
  };
};
