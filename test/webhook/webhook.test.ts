import { randomUUID } from 'node:crypto';
import { CloudEvent, HTTP } from 'cloudevents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backup, Restore } from '../../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import {
  fixtures,
  newSecret,
  type Reply,
  signedHeaders,
  startWebhook,
  type WebhookServer,
} from './support.ts';

/** This file's traffic is more than a namespace's default budget; the limits have tests of their own. */
/**
 * The shared server's limits lifted, per namespace and per source address: this suite sends
 * bursts from one address, and how many the default budget admits depends on how fast the
 * machine runs it. The limits are tested on servers of their own (below).
 */
const UNLIMITED = {
  TIDEWAY_WEBHOOK_NAMESPACE_RATE: '10000',
  TIDEWAY_WEBHOOK_NAMESPACE_BURST: '10000',
  TIDEWAY_WEBHOOK_SOURCE_RATE: '10000',
  TIDEWAY_WEBHOOK_SOURCE_BURST: '10000',
  TIDEWAY_WEBHOOK_ID_RATE: '10000',
  TIDEWAY_WEBHOOK_ID_BURST: '10000',
};
/** Clusters that concurrent restore requests race for, one round each. */
const RACES = ['race-a', 'race-b', 'race-c'];
const errorOf = (r: Reply) => (r.json as { error?: { code?: string; message?: string } })?.error;

/**
 * The webhook function end to end: two replicas of the product's function sharing a port, as its
 * own ServiceAccount, on the test bed's API server and NATS. Nothing acts on the objects it makes
 * (no restore function runs here), so a Restore it makes stays Pending: exactly what the "second
 * restore while one is pending" refusal needs.
 */
describe('webhook', () => {
  const b = bed();
  const secret = newSecret();
  let ns: string;
  let hook: WebhookServer;
  let f: ReturnType<typeof fixtures>;
  /** Every response body, to prove none carries the secret. */
  const replies: string[] = [];
  /** Every server started, to check all their logs at the end. */
  const servers: WebhookServer[] = [];
  const started = async (o: Parameters<typeof startWebhook>[1]) => {
    const s = await startWebhook(b, o);
    servers.push(s);
    return s;
  };
  const keep = async (r: Promise<Reply>) => {
    const reply = await r;
    replies.push(reply.text, JSON.stringify([...reply.headers]));
    return reply;
  };
  const restorePath = (cluster: string, namespace = ns) =>
    `/v1/namespaces/${namespace}/redisclusters/${cluster}/restore`;
  const backupPath = (cluster: string) => `/v1/namespaces/${ns}/redisclusters/${cluster}/backup`;
  const post = (path: string, body: string, o: { id?: string; timestamp?: number; key?: string } = {}) =>
    keep(hook.signed('POST', path, o.key ?? secret, { body, ...o }));
  /** A refusal: its status and code, and not one object more in the namespace. */
  const refused = async (request: () => Promise<Reply>, status: number, code: string) => {
    const before = await f.objects();
    const r = await request();
    expect({ status: r.status, code: errorOf(r)?.code }, r.text).toEqual({ status, code });
    expect(typeof errorOf(r)?.message).toBe('string');
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await f.objects()).toEqual(before);
    return r;
  };

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'webhook');
    f = fixtures(b, ns);
    await f.secret(secret);
    for (const c of ['cache', 'twin', 'idem', 'lone', 'events', 'fresh', ...RACES]) await f.cluster(c);
    await f.cluster('nostore', { store: false });
    await f.backup('nightly', 'cache', 'Completed');
    await f.backup('events-nightly', 'events', 'Completed');
    for (const c of RACES) await f.backup(`${c}-nightly`, c, 'Completed');
    await f.backup('idem-nightly', 'idem', 'Completed');
    await f.backup('fresh-nightly', 'fresh', 'Completed');
    await f.backup('half', 'cache', 'Running');
    await f.backup('broken', 'cache', 'Failed');
    // A Completed backup of an EtcdCluster namesake: never restored into the RedisCluster.
    await f.backup('etcd-cache', 'cache', 'Completed', {}, 'EtcdCluster');
    // …and for latest: lone's only Completed backups are a safety backup and an etcd namesake's.
    await f.backup('lone-etcd', 'lone', 'Completed', {}, 'EtcdCluster');
    // A restore's safety backup: Completed, but not a candidate for latest.
    await f.backup('lone-safety', 'lone', 'Completed', { 'tideway.dev/safety-backup': 'true' });
    hook = await started({ namespace: ns, replicas: 2, env: UNLIMITED });
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    // The secret (and its key) never reached a response or a log line.
    const key = secret.slice('whsec_'.length);
    const logs = servers.map((s) => s.output());
    expect(logs.join('\n')).toMatch(/"msg":"request"/); // request lines were logged, and checked
    for (const text of [...replies, ...logs]) {
      expect(text.includes(key)).toBe(false);
      expect(text.includes(Buffer.from(key, 'base64').toString('hex'))).toBe(false);
    }
    // Least privilege is enough: the API server refused the webhook nothing.
    for (const log of logs) expect(log).not.toMatch(/forbidden|"code":403|HTTP-Code: 403|: 403 /i);
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it('a signed restore request makes a Restore, says where its status is, and reports it', async () => {
    const id = `msg_${randomUUID()}`;
    const r = await post(restorePath('cache'), '{"backup":"nightly"}', { id });
    expect(r.status, r.text).toBe(202);
    const body = r.json as { restore: { namespace: string; name: string }; status: string };
    expect(body.restore.namespace).toBe(ns);
    expect(body.status).toBe(`/v1/namespaces/${ns}/restores/${body.restore.name}`);
    expect(r.headers.get('location')).toBe(body.status);
    expect(r.headers.get('idempotent-replayed')).toBeNull();

    const restore = (await b.custom.getNamespacedCustomObject({
      ...TIDEWAY_KINDS.Restore,
      namespace: ns,
      name: body.restore.name,
    })) as Restore;
    // The CRD's defaults: a safety backup first, and the whole object verified first.
    expect(restore.spec).toEqual({
      cluster: { name: 'cache' },
      source: { backup: { name: 'nightly' } },
      safetyBackup: true,
      verifyFirst: true,
    });
    expect(restore.metadata.labels).toEqual({ 'tideway.dev/requested-by': 'webhook' });
    const a = restore.metadata.annotations ?? {};
    expect(a['tideway.dev/requested-by']).toBe('webhook');
    expect(a['tideway.dev/webhook-id']).toBe(id);
    expect(a['tideway.dev/webhook-peer']).toMatch(/127\.0\.0\.1/);
    expect(a['tideway.dev/webhook-user-agent']).toBeTruthy();
    expect(Date.now() - Date.parse(a['tideway.dev/webhook-received-at'] ?? '')).toBeLessThan(60_000);
    expect(a['tideway.dev/webhook-request-sha256']).toMatch(/^[0-9a-f]{64}$/);

    // Its status through the same signed API (what a restore function writes shows here).
    await f.setStatus('restores', body.restore.name, { phase: 'Pending', source: 'backup nightly' });
    const s = await keep(hook.signed('GET', body.status, secret));
    expect(s.status, s.text).toBe(200);
    expect(s.json).toEqual({
      restore: { namespace: ns, name: body.restore.name },
      cluster: 'cache',
      status: { phase: 'Pending', source: 'backup nightly' },
    });
  });

  it('the same webhook-id again creates nothing and answers with the first object, also after a restart', async () => {
    const id = `msg_${randomUUID()}`;
    const first = await post(restorePath('idem'), '{"backup":"idem-nightly"}', { id });
    expect(first.status, first.text).toBe(202);
    const before = await f.objects();
    // A sender's retry: same id and body, a new timestamp and signature.
    const again = await post(restorePath('idem'), '{"backup":"idem-nightly"}', {
      id,
      timestamp: Math.floor(Date.now() / 1000) + 1,
    });
    expect(again.status, again.text).toBe(202);
    expect(again.json).toEqual(first.json);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await f.objects()).toEqual(before);

    // The record is the object itself: a fresh process (no memory of the first) answers the same.
    await hook.stop();
    hook = await started({ namespace: ns, replicas: 2, env: UNLIMITED });
    const later = await post(restorePath('idem'), '{"backup":"idem-nightly"}', { id });
    expect(later.status, later.text).toBe(202);
    expect(later.json).toEqual(first.json);
    expect(await f.objects()).toEqual(before);

    // The same id for a different request is refused, not mistaken for a retry.
    await refused(() => post(restorePath('idem'), '{"latest":true}', { id }), 409, 'WebhookIdReused');
    await refused(() => post(backupPath('idem'), '{}', { id }), 409, 'WebhookIdReused');
  });

  it('one id sent many times at once, to both replicas, makes one object', async () => {
    const id = `msg_${randomUUID()}`;
    const replies = await Promise.all(
      Array.from({ length: 12 }, () => post(backupPath('twin'), '{}', { id })),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(12).fill(202));
    expect(new Set(replies.map((r) => JSON.stringify(r.json))).size).toBe(1);
    const made = (await f.backups()).filter((x) => x.metadata.annotations?.['tideway.dev/webhook-id'] === id);
    expect(made).toHaveLength(1);
    expect(replies.filter((r) => r.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
  });

  it('restore requests for one cluster at once, with different ids, on both replicas: one wins, the rest get 409', async () => {
    // Both replicas hold the namespace's key first, so the requests below race in the checks.
    await Promise.all(
      Array.from({ length: 16 }, () =>
        keep(hook.signed('GET', `/v1/namespaces/${ns}/restores/warm-up`, secret)),
      ),
    );
    for (const cluster of RACES) {
      const replies = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          post(restorePath(cluster), `{"backup":"${cluster}-nightly"}`, { id: `race-${cluster}-${i}` }),
        ),
      );
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses, replies.map((r) => r.text).join('\n')).toEqual([202, ...Array(15).fill(409)]);
      expect(replies.filter((r) => r.status === 409).map((r) => errorOf(r)?.code)).toEqual(
        Array(15).fill('RestoreInProgress'),
      );
      expect((await f.restores()).filter((r) => r.spec.cluster.name === cluster)).toHaveLength(1);
    }
    // Both replicas took part (the kernel spreads connections over a shared port).
    const replicasServing = new Set(
      hook
        .output()
        .split('\n')
        .filter((l) => l.includes('"webhookId":"race-'))
        .map((l) => (JSON.parse(l) as { replica: string }).replica),
    );
    expect([...replicasServing].sort()).toEqual(['0', '1']);
  });

  it('{"latest":true} needs a Completed backup of the cluster (a safety backup does not count); then a Restore of the latest is made', async () => {
    await refused(() => post(restorePath('lone'), '{"latest":true}'), 404, 'NoCompletedBackup');
    await refused(() => post(restorePath('nostore'), '{"latest":true}'), 404, 'NoCompletedBackup');
    const r = await post(restorePath('fresh'), '{"latest":true}');
    expect(r.status, r.text).toBe(202);
    const name = (r.json as { restore: { name: string } }).restore.name;
    const restore = (await f.restores()).find((x) => x.metadata.name === name);
    expect(restore?.spec.source).toEqual({ latest: true });
  });

  it('a signed backup request makes a Backup; a cluster without a store is refused', async () => {
    const r = await post(backupPath('cache'), '{}');
    expect(r.status, r.text).toBe(202);
    const { backup, status } = r.json as { backup: { namespace: string; name: string }; status: string };
    expect(status).toBe(`/v1/namespaces/${ns}/backups/${backup.name}`);
    const made = (await f.backups()).find((x) => x.metadata.name === backup.name) as Backup;
    // The API server fills in the CRD's default kind.
    expect(made.spec.cluster).toEqual({ name: 'cache', kind: 'RedisCluster' });
    expect(made.metadata.annotations?.['tideway.dev/requested-by']).toBe('webhook');
    const s = await keep(hook.signed('GET', status, secret));
    expect(s.status, s.text).toBe(200);
    expect((s.json as { cluster: string }).cluster).toBe('cache');
    await refused(() => post(backupPath('nostore'), '{}'), 409, 'NoBackupStore');
  });

  it('accepts CloudEvents in binary and structured mode, and records who sent them', async () => {
    const event = (type: string, data: unknown) =>
      new CloudEvent({ type, source: '/ci/pipeline/42', id: randomUUID(), subject: 'events', data });
    for (const [mode, message] of [
      ['binary', HTTP.binary(event('dev.tideway.backup.requested', {}))],
      ['structured', HTTP.structured(event('dev.tideway.backup.requested', {}))],
    ] as const) {
      const body = String(message.body);
      const r = await keep(
        hook.send('POST', backupPath('events'), {
          body,
          headers: { ...(message.headers as Record<string, string>), ...signedHeaders(secret, body) },
        }),
      );
      expect(r.status, `${mode}: ${r.text}`).toBe(202);
      const name = (r.json as { backup: { name: string } }).backup.name;
      const a = (await f.backups()).find((x) => x.metadata.name === name)?.metadata.annotations ?? {};
      expect(a['tideway.dev/cloudevent-source'], mode).toBe('/ci/pipeline/42');
      expect(a['tideway.dev/cloudevent-type'], mode).toBe('dev.tideway.backup.requested');
      expect(a['tideway.dev/cloudevent-subject'], mode).toBe('events');
      expect(a['tideway.dev/cloudevent-id'], mode).toMatch(/^[0-9a-f-]{36}$/);
    }
    const restore = HTTP.structured(event('dev.tideway.restore.requested', { backup: 'events-nightly' }));
    const body = String(restore.body);
    const r = await keep(
      hook.send('POST', restorePath('events'), {
        body,
        headers: { ...(restore.headers as Record<string, string>), ...signedHeaders(secret, body) },
      }),
    );
    expect(r.status, r.text).toBe(202);

    // An event of the other endpoint's type is refused.
    const wrong = HTTP.binary(event('dev.tideway.restore.requested', { latest: true }));
    const wrongBody = String(wrong.body);
    await refused(
      () =>
        keep(
          hook.send('POST', backupPath('events'), {
            body: wrongBody,
            headers: { ...(wrong.headers as Record<string, string>), ...signedHeaders(secret, wrongBody) },
          }),
        ),
      400,
      'WrongEventType',
    );
  });

  describe('refuses, and creates nothing:', () => {
    const body = '{"backup":"nightly"}';
    it('a missing signature', async () => {
      await refused(
        () =>
          keep(
            hook.send('POST', restorePath('lone'), { body, headers: { 'content-type': 'application/json' } }),
          ),
        401,
        'MissingSignature',
      );
      const { 'webhook-timestamp': _, ...noTimestamp } = signedHeaders(secret, body);
      await refused(
        () => keep(hook.send('POST', restorePath('lone'), { body, headers: noTimestamp })),
        401,
        'MissingSignature',
      );
    });
    it('a wrong signature', async () => {
      const h = signedHeaders(secret, body);
      const sig = Buffer.from(h['webhook-signature']!.slice(3), 'base64');
      sig[0] = (sig[0] ?? 0) ^ 1;
      h['webhook-signature'] = `v1,${sig.toString('base64')}`;
      await refused(
        () => keep(hook.send('POST', restorePath('lone'), { body, headers: h })),
        401,
        'BadSignature',
      );
      // A signature of another body (a tampered body).
      const other = signedHeaders(secret, '{"backup":"other"}');
      await refused(
        () => keep(hook.send('POST', restorePath('lone'), { body, headers: other })),
        401,
        'BadSignature',
      );
    });
    it('the wrong secret', async () => {
      await refused(() => post(restorePath('lone'), body, { key: newSecret() }), 401, 'BadSignature');
    });
    it('a stale or future timestamp', async () => {
      const now = Math.floor(Date.now() / 1000);
      await refused(() => post(restorePath('lone'), body, { timestamp: now - 301 }), 401, 'StaleTimestamp');
      await refused(() => post(restorePath('lone'), body, { timestamp: now + 400 }), 401, 'StaleTimestamp');
    });
    it('malformed JSON and bodies the endpoint does not take', async () => {
      await refused(() => post(restorePath('lone'), '{"backup":'), 400, 'MalformedJson');
      await refused(
        () => post(restorePath('lone'), '{"backup":"nightly","latest":true}'),
        400,
        'InvalidBody',
      );
      await refused(() => post(restorePath('lone'), '{"latest":false}'), 400, 'InvalidBody');
      await refused(() => post(restorePath('lone'), ''), 400, 'InvalidBody');
      await refused(() => post(backupPath('lone'), '{"store":{}}'), 400, 'InvalidBody');
    });
    it('an unknown cluster', async () => {
      await refused(() => post(restorePath('nope'), '{"latest":true}'), 404, 'ClusterNotFound');
      await refused(() => post(backupPath('nope'), '{}'), 404, 'ClusterNotFound');
    });
    it('an unknown backup, one not Completed, or one being deleted', async () => {
      await refused(() => post(restorePath('lone'), '{"backup":"nope"}'), 404, 'BackupNotFound');
      await refused(() => post(restorePath('lone'), '{"backup":"half"}'), 409, 'BackupNotCompleted');
      await refused(() => post(restorePath('lone'), '{"backup":"broken"}'), 409, 'BackupNotCompleted');
      await refused(() => post(restorePath('cache'), '{"backup":"etcd-cache"}'), 409, 'WrongClusterKind');
      // Deleted and held by a finalizer, as the backup function holds one a restore still uses.
      await f.backup('going', 'cache', 'Completed');
      const BACKUP = { ...TIDEWAY_KINDS.Backup, namespace: ns, name: 'going' };
      const hold = 'test.tideway.dev/hold';
      await b.custom.patchNamespacedCustomObject({
        ...BACKUP,
        body: [{ op: 'add', path: '/metadata/finalizers', value: [hold] }],
      });
      await b.custom.deleteNamespacedCustomObject(BACKUP);
      try {
        await refused(() => post(restorePath('cache'), '{"backup":"going"}'), 409, 'BackupDeleting');
      } finally {
        await b.custom.patchNamespacedCustomObject({
          ...BACKUP,
          body: [{ op: 'remove', path: '/metadata/finalizers' }],
        });
      }
    });
    it('an oversized body', async () => {
      const big = `{"backup":"${'a'.repeat(20_000)}"}`;
      await refused(() => post(restorePath('lone'), big), 413, 'BodyTooLarge');
      // Also when the sender does not say its length up front (chunked).
      const stream = new ReadableStream({
        start(c) {
          for (let i = 0; i < 40; i++) c.enqueue(new TextEncoder().encode('x'.repeat(1000)));
          c.close();
        },
      });
      const before = await f.objects();
      const res = await fetch(hook.url + restorePath('lone'), {
        method: 'POST',
        body: stream,
        duplex: 'half',
        headers: signedHeaders(secret, 'whatever'),
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('BodyTooLarge');
      expect(await f.objects()).toEqual(before);
    });
    it('a second restore while one is pending', async () => {
      // cache has the Pending Restore of the first test.
      const r = await refused(() => post(restorePath('cache'), '{"latest":true}'), 409, 'RestoreInProgress');
      expect(errorOf(r)?.message).toMatch(/Pending/);
    });
    it('a namespace without the Secret, or another namespace than the one served', async () => {
      const other = await createNamespace(b.core, 'webhook-nosecret');
      const solo = await started({});
      try {
        const r = await keep(solo.signed('POST', restorePath('cache', other), secret, { body }));
        expect({ status: r.status, code: errorOf(r)?.code }).toEqual({
          status: 401,
          code: 'WebhookNotConfigured',
        });
        expect(errorOf(r)?.message).toMatch(/Secret tideway-webhook/);
        // An unusable secret is refused too, never used.
        await fixtures(b, other).secret('not-a-whsec-secret');
        await until(
          'the Secret is read',
          async () => {
            const x = await keep(solo.signed('POST', restorePath('cache', other), secret, { body }));
            return errorOf(x)?.code === 'WebhookSecretInvalid' ? x : undefined;
          },
          20_000,
          500,
        );
        expect(
          (
            (await b.custom.listNamespacedCustomObject({ ...TIDEWAY_KINDS.Restore, namespace: other })) as {
              items: unknown[];
            }
          ).items,
        ).toEqual([]);
      } finally {
        await solo.stop();
        await b.core.deleteNamespace({ name: other }).catch(() => undefined);
      }
      await refused(
        () => keep(hook.signed('POST', restorePath('cache', 'default'), secret, { body })),
        404,
        'NamespaceNotServed',
      );
    });
  });

  it('serves /healthz, /readyz, /metrics and /openapi.json without a signature', async () => {
    expect((await hook.send('GET', '/healthz')).status).toBe(200);
    expect((await hook.send('GET', '/readyz')).status).toBe(200);
    const m = await hook.send('GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.text).toMatch(/tideway_webhook_requests_total\{[^}]*code="OK"/);
    const o = await hook.send('GET', '/openapi.json');
    expect((o.json as { openapi: string }).openapi).toBe('3.1.0');
  });

  it('limits requests per source address', async () => {
    const limited = await started({
      namespace: ns,
      env: { TIDEWAY_WEBHOOK_SOURCE_RATE: '1', TIDEWAY_WEBHOOK_SOURCE_BURST: '3' },
    });
    try {
      const before = await f.objects();
      const replies = await Promise.all(
        Array.from({ length: 10 }, () => limited.signed('POST', backupPath('nope'), secret, { body: '{}' })),
      );
      const limitedReplies = replies.filter((r) => r.status === 429);
      expect(limitedReplies.length).toBeGreaterThanOrEqual(6);
      expect(limitedReplies.every((r) => errorOf(r)?.code === 'RateLimited')).toBe(true);
      expect(Number(limitedReplies[0]?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await f.objects()).toEqual(before);
      // Health stays reachable for probes.
      expect((await limited.send('GET', '/healthz')).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });

  it('limits signed requests per namespace', async () => {
    const limited = await started({
      namespace: ns,
      env: { TIDEWAY_WEBHOOK_NAMESPACE_RATE: '1', TIDEWAY_WEBHOOK_NAMESPACE_BURST: '2' },
    });
    try {
      // Unsigned requests do not use up the namespace's budget...
      for (let i = 0; i < 5; i++)
        expect((await limited.send('POST', backupPath('nope'), { body: '{}' })).status).toBe(401);
      const replies = [];
      for (let i = 0; i < 4; i++)
        replies.push(await limited.signed('POST', backupPath('nope'), secret, { body: '{}' }));
      // ...signed ones do: two pass (to the 404), then the namespace is limited.
      expect(replies.map((r) => r.status).slice(0, 2)).toEqual([404, 404]);
      expect(replies.slice(2).some((r) => errorOf(r)?.code === 'RateLimited')).toBe(true);
    } finally {
      await limited.stop();
    }
  });
});
