import { randomBytes } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { SECRET_KEY, SECRET_NAME } from '../functions/webhook/kube.ts';
import { freePort } from '../infra/testbed/process/ports.ts';
import { until } from '../infra/testbed/wait.ts';
import { statusOf } from '../shared/kube/errors.ts';

/** The namespace whose Secret `npm start` writes: where a newcomer's first cluster lives. */
export const LOCAL_WEBHOOK_NAMESPACE = 'default';

/**
 * A fresh `whsec_` secret stored as Secret tideway-webhook (key `secret`) in namespace default,
 * replacing one an earlier run left: what the webhook checks signatures with (API.md, Commands).
 */
export const writeLocalWebhookSecret = async (admin: KubeConfig): Promise<string> => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const core = admin.makeApiClient(CoreV1Api);
  const body = {
    metadata: { name: SECRET_NAME, labels: { 'app.kubernetes.io/part-of': 'tideway' } },
    type: 'Opaque',
    stringData: { [SECRET_KEY]: secret },
  };
  try {
    await core.createNamespacedSecret({ namespace: LOCAL_WEBHOOK_NAMESPACE, body });
  } catch (error) {
    if (statusOf(error) !== 409) throw error;
    await core.replaceNamespacedSecret({ namespace: LOCAL_WEBHOOK_NAMESPACE, name: SECRET_NAME, body });
  }
  return secret;
};

/** Resolves once the webhook at `url` answers /readyz. */
export const webhookReady = (url: string) =>
  until(
    `the webhook at ${url}`,
    async () => ((await fetch(`${url}/readyz`)).status === 200 ? true : undefined),
    60_000,
    250,
  );

/**
 * The webhook of `npm start`: a free port on loopback, the secret above, the environment for the
 * webhook's processes, and the variables `.tideway/local/env` gets once it answers.
 */
export const prepareLocalWebhook = async (admin: KubeConfig) => {
  const port = await freePort();
  const secret = await writeLocalWebhookSecret(admin);
  const url = `http://127.0.0.1:${port}`;
  return {
    /** For the webhook function's processes (both replicas share the port). */
    env: { TIDEWAY_WEBHOOK_HOST: '127.0.0.1', TIDEWAY_WEBHOOK_PORT: String(port) },
    /** For `.tideway/local/env`. */
    vars: { TIDEWAY_WEBHOOK_URL: url, TIDEWAY_WEBHOOK_SECRET: secret },
    /** Resolves once the server answers /readyz. */
    ready: () => webhookReady(url),
  };
};
