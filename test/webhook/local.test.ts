import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCAL_WEBHOOK_NAMESPACE, prepareLocalWebhook } from '../../scripts/local-webhook.ts';
import { bed } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { newSecret, signedHeaders, startWebhook, type WebhookServer } from './support.ts';

/**
 * What `npm start` does for the webhook (scripts/local-webhook.ts), on the shared test bed: the
 * Secret in default, the server on the port it chose, and the URL and secret it hands to
 * `.tideway/local/env` work together.
 */
describe('npm start’s webhook', () => {
  const b = bed();
  const admin = new KubeConfig();
  admin.loadFromFile(b.info.kubeconfig);
  let server: WebhookServer | undefined;

  afterAll(async () => {
    await server?.stop();
    await b.core
      .deleteNamespacedSecret({ name: 'tideway-webhook', namespace: LOCAL_WEBHOOK_NAMESPACE })
      .catch(() => undefined);
  });

  it('stores a whsec_ secret in default, and the URL and secret it writes out are the server’s', async () => {
    await installCrds(b.info);
    await prepareLocalWebhook(admin); // a Secret left by an earlier run is replaced, not an error
    const local = await prepareLocalWebhook(admin);
    const { TIDEWAY_WEBHOOK_URL: url, TIDEWAY_WEBHOOK_SECRET: secret } = local.vars;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const stored = await b.core.readNamespacedSecret({ name: 'tideway-webhook', namespace: 'default' });
    expect(Buffer.from(stored.data?.secret ?? '', 'base64').toString()).toBe(secret);

    server = await startWebhook(b, { port: Number(local.env.TIDEWAY_WEBHOOK_PORT), env: local.env });
    await local.ready();
    expect(server.url).toBe(url);
    const path = '/v1/namespaces/default/redisclusters/no-such-cluster/backup';
    // Signed with the secret: past the signature, to the cluster check.
    const ok = await fetch(url + path, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json', ...signedHeaders(secret, '{}') },
    });
    expect(ok.status).toBe(404);
    expect(await ok.json()).toMatchObject({ error: { code: 'ClusterNotFound' } });
    const bad = await fetch(url + path, {
      method: 'POST',
      body: '{}',
      headers: signedHeaders(newSecret(), '{}'),
    });
    expect(bad.status).toBe(401);
  });
});
