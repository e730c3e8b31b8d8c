import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ApiStatusError } from '../../shared/kube/lite/http.ts';
import { createLogger } from '../../shared/runtime/logger.ts';
import { createMetrics } from '../../shared/runtime/metrics.ts';
import { createApp } from './app.ts';
import type { Kind, WebhookKube } from './kube.ts';
import { localMutex } from './mutex.ts';
import { PER_ID, type RateLimit, tokenBuckets } from './rate-limit.ts';
import { secretKeys } from './secrets.ts';

// The app through app.request(), without a socket, on an in-memory Kubernetes. What it does on a
// real API server is proven by test/webhook/; here: the order of checks, caching and what leaks.

const secretOf = () => `whsec_${randomBytes(32).toString('base64')}`;
const sign = (
  secret: string,
  body: string,
  id = `msg_${randomUUID()}`,
  ts = Math.floor(Date.now() / 1000),
) => ({
  'webhook-id': id,
  'webhook-timestamp': String(ts),
  'webhook-signature': `v1,${createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
    .update(`${id}.${ts}.${body}`)
    .digest('base64')}`,
});

const memoryKube = (secret: { value: string | undefined }) => {
  const objects = new Map<string, unknown>();
  const calls = { secret: 0, create: 0 };
  let failWith: Error | undefined;
  const k = (kind: Kind, ns: string, name: string) => `${kind}/${ns}/${name}`;
  const kube: WebhookKube = {
    webhookSecret: async () => {
      calls.secret++;
      if (failWith) throw failWith;
      return secret.value;
    },
    get: async (kind, ns, name) => {
      if (failWith) throw failWith;
      return objects.get(k(kind, ns, name));
    },
    list: async (kind, ns) =>
      [...objects].filter(([key]) => key.startsWith(`${kind}/${ns}/`)).map(([, o]) => o),
    create: async (kind, ns, body) => {
      calls.create++;
      const name = (body.metadata as { name: string }).name;
      if (objects.has(k(kind, ns, name))) return undefined;
      objects.set(k(kind, ns, name), body);
      return body;
    },
    ready: async () => true,
  };
  return {
    kube,
    calls,
    objects,
    put: (kind: Kind, ns: string, name: string, o: unknown) => objects.set(k(kind, ns, name), o),
    fail: (e: Error | undefined) => {
      failWith = e;
    },
  };
};

const setup = (
  o: { now?: () => number; ready?: () => Promise<boolean>; namespaceLimit?: RateLimit } = {},
) => {
  const secret = { value: secretOf() as string | undefined };
  const mem = memoryKube(secret);
  const lines: string[] = [];
  const metrics = createMetrics();
  const app = createApp({
    kube: mem.kube,
    keys: secretKeys(mem.kube),
    mutex: localMutex(),
    log: createLogger({}, { write: (l) => lines.push(l) }),
    metrics,
    now: o.now ?? (() => Date.now()),
    limits: {
      source: tokenBuckets({ rate: 1000, burst: 1000 }),
      namespace: tokenBuckets(o.namespaceLimit ?? { rate: 1000, burst: 1000 }),
      id: tokenBuckets(PER_ID),
    },
    maxBodyBytes: 1024,
    peerOf: () => '10.0.0.1',
    ready: o.ready ?? (async () => true),
    openapi: {},
  });
  mem.put('RedisCluster', 'ns', 'cache', {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: { name: 'cache' },
    spec: { backup: { store: { s3: { bucket: 'bkp', credentialsSecret: { name: 'c' } } } } },
  });
  const post = (path: string, body: string, headers: Record<string, string>) =>
    app.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { app, mem, secret, lines, metrics, post };
};
const BACKUP = '/v1/namespaces/ns/redisclusters/cache/backup';
const RESTORE = '/v1/namespaces/ns/redisclusters/cache/restore';

describe('webhook app', () => {
  it('refuses a restore while one of the cluster runs, not while one the runtime gave up on before a load waits', async () => {
    const s = setup();
    s.mem.put('Backup', 'ns', 'nightly', {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'Backup',
      metadata: { name: 'nightly', namespace: 'ns' },
      spec: { cluster: { name: 'cache' } },
      status: { phase: 'Completed', completedAt: '2026-11-28T00:00:00Z' },
    });
    const running = (conditions: unknown[]) => ({
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'Restore',
      metadata: { name: 'earlier', namespace: 'ns' },
      spec: { cluster: { name: 'cache' }, source: { latest: true } },
      status: { phase: 'Verifying', conditions },
    });
    const at = { lastTransitionTime: '2026-11-28T00:00:00Z', type: 'Completed', status: 'False' };
    s.mem.put('Restore', 'ns', 'earlier', running([{ ...at, reason: 'Verifying', message: 'reading' }]));
    const body = '{"latest":true}';
    const busy = await s.post(RESTORE, body, sign(s.secret.value!, body));
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ error: { code: 'RestoreInProgress' } });
    s.mem.put(
      'Restore',
      'ns',
      'earlier',
      running([
        { ...at, reason: 'RetriesExhausted', message: 'the handler did not finish in 1000 attempts' },
      ]),
    );
    expect((await s.post(RESTORE, body, sign(s.secret.value!, body))).status).toBe(202);
    // Given up on mid-load: its load is not settled yet, and it alone still holds the cluster.
    for (const key of [...s.mem.objects.keys()])
      if (key.startsWith('Restore/ns/webhook-')) s.mem.objects.delete(key);
    expect([...s.mem.objects.keys()].filter((k) => k.startsWith('Restore/'))).toEqual(['Restore/ns/earlier']);
    const loading = running([{ ...at, reason: 'RetriesExhausted', message: 'gave up' }]);
    s.mem.put('Restore', 'ns', 'earlier', { ...loading, status: { ...loading.status, phase: 'Restoring' } });
    const again = '{"latest": true}';
    const held = await s.post(RESTORE, again, sign(s.secret.value!, again));
    expect(held.status).toBe(409);
    const refusal = ((await held.json()) as { error: { code: string; message: string } }).error;
    expect(refusal.code).toBe('RestoreInProgress');
    expect(refusal.message).toMatch(/earlier \(Restoring, given up on: /);
  });

  it('limits a replayed webhook-id on its own: the namespace keeps its budget for other requests', async () => {
    const s = setup({ namespaceLimit: { rate: 0.001, burst: 5 } });
    const body = '{}';
    const captured = sign(s.secret.value!, body);
    const answers = [];
    for (let i = 0; i < 20; i++) answers.push((await s.post(BACKUP, body, captured)).status);
    // The first makes the Backup, two more are replays; the rest are refused on the id alone.
    expect(answers).toEqual([202, 202, 202, ...Array(17).fill(429)]);
    expect(s.mem.calls.create).toBe(1);
    // Three of the namespace's five went to the id: two other requests still pass.
    expect((await s.post(BACKUP, body, sign(s.secret.value!, body))).status).toBe(202);
    expect((await s.post(BACKUP, body, sign(s.secret.value!, body))).status).toBe(202);
    const over = await s.post(BACKUP, body, sign(s.secret.value!, body));
    expect(over.status).toBe(429);
    expect(((await over.json()) as { error: { message: string } }).error.message).toMatch(/namespace ns/);
  });

  it('makes nothing of a signed status request replayed as a POST: an empty body is refused', async () => {
    const s = setup();
    // What a client polling a status sends: an empty body, signed; its id made nothing.
    const polled = sign(s.secret.value!, '');
    const r = await s.app.request(BACKUP, { method: 'POST', headers: polled });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: { code: 'InvalidBody' } });
    const ce = await s.app.request(BACKUP, {
      method: 'POST',
      headers: {
        ...polled,
        'ce-specversion': '1.0',
        'ce-type': 'dev.tideway.backup.requested',
        'ce-id': 'x',
        'ce-source': '/x',
      },
    });
    expect(ce.status).toBe(400);
    expect(s.mem.calls.create).toBe(0);
    // `{}` is the body of a backup request.
    expect((await s.post(BACKUP, '{}', sign(s.secret.value!, '{}'))).status).toBe(202);
  });

  it('answers a body cut short by its sender with a 400, and one over the limit with a 413, never a 5xx', async () => {
    const s = setup();
    const streamed = (chunks: Uint8Array[], cut: boolean, length?: number) =>
      new Request(`http://webhook${BACKUP}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...sign(s.secret.value!, '{}'),
          ...(length === undefined ? {} : { 'content-length': String(length) }),
        },
        body: new ReadableStream({
          start(c) {
            for (const chunk of chunks) c.enqueue(chunk);
            if (cut) c.error(new Error('socket hang up'));
            else c.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
    // Without a length (read as it comes, by the size check), and with one (read once signed).
    for (const length of [undefined, 2]) {
      const cut = await s.app.request(streamed([new TextEncoder().encode('{')], true, length));
      expect(cut.status, `length ${length}`).toBe(400);
      expect(await cut.json()).toMatchObject({ error: { code: 'InvalidBody' } });
    }
    const big = await s.app.request(streamed([new Uint8Array(800), new Uint8Array(800)], false));
    expect(big.status).toBe(413);
    expect(s.lines.filter((l) => l.includes('request failed'))).toEqual([]);
    expect(s.mem.calls.create).toBe(0);
  });

  it('checks readiness once for all the probes that come at the same time', async () => {
    const answers: ((ok: boolean) => void)[] = [];
    const s = setup({ ready: () => new Promise<boolean>((resolve) => answers.push(resolve)) });
    const probes = Array.from({ length: 50 }, () => s.app.request('/readyz'));
    await new Promise((r) => setTimeout(r, 10));
    const checks = answers.length;
    for (const answer of answers) answer(true);
    expect((await Promise.all(probes)).map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(checks).toBe(1);
  });

  it('refuses unsigned and malformed requests before it reads any Secret', async () => {
    const s = setup();
    const attempts: Record<string, string>[] = [
      {},
      { 'webhook-id': 'x' },
      { ...sign(s.secret.value!, '{}'), 'webhook-timestamp': '1' },
    ];
    for (const headers of attempts) {
      const r = await s.post(BACKUP, '{}', headers);
      expect(r.status).toBe(401);
    }
    expect(s.mem.calls.secret).toBe(0);
  });

  it('reads a namespace’s Secret once per few seconds, and again at once for a rotated secret', async () => {
    let now = 1_800_000_000_000;
    const s = setup({ now: () => now });
    const old = s.secret.value!;
    const ts = Math.floor(now / 1000);
    for (let i = 0; i < 5; i++)
      expect((await s.post(BACKUP, '{}', sign(old, '{}', undefined, ts))).status).toBe(202);
    expect(s.mem.calls.secret).toBe(1);
    // Rotated: the first request with the new secret re-reads it (the cached key is > 1 s old).
    s.secret.value = secretOf();
    now += 1500;
    const fresh = await s.post(BACKUP, '{}', sign(s.secret.value, '{}', undefined, ts + 1));
    expect(fresh.status).toBe(202);
    expect(s.mem.calls.secret).toBe(2);
    // A flood of bad signatures does not turn into reads.
    for (let i = 0; i < 20; i++)
      expect((await s.post(BACKUP, '{}', sign(old, '{}', undefined, ts + 1))).status).toBe(401);
    expect(s.mem.calls.secret).toBe(2);
  });

  it('fails closed without a Secret, and with a Secret that is not a whsec_ secret', async () => {
    const s = setup();
    const key = s.secret.value!;
    s.secret.value = undefined;
    const r = await s.post(BACKUP, '{}', sign(key, '{}'));
    expect(r.status).toBe(401);
    expect(await r.json()).toMatchObject({ error: { code: 'WebhookNotConfigured' } });
    const t = setup();
    t.secret.value = 'hunter2';
    const x = await t.post(BACKUP, '{}', sign(secretOf(), '{}'));
    const text = await x.text();
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'WebhookSecretInvalid' } });
    expect(text).not.toContain('hunter2');
    expect(s.mem.objects.size + t.mem.objects.size).toBe(2); // the two clusters only
  });

  it('answers 503 with Retry-After when Kubernetes does not, and 500 only for what cannot be retried', async () => {
    const s = setup();
    s.mem.fail(new ApiStatusError(503, 'GET …: 503 etcd leader changed'));
    const r = await s.post(BACKUP, '{}', sign(s.secret.value!, '{}'));
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('2');
    expect(await r.json()).toMatchObject({ error: { code: 'Unavailable' } });
    s.mem.fail(new Error('connect ECONNREFUSED'));
    expect((await s.post(BACKUP, '{}', sign(s.secret.value!, '{}'))).status).toBe(503);
    s.mem.fail(new ApiStatusError(403, 'GET …: 403 forbidden'));
    const f = await s.post(BACKUP, '{}', sign(s.secret.value!, '{}'));
    expect(f.status).toBe(500);
    expect(await f.json()).toMatchObject({ error: { code: 'Internal' } });
    expect(s.lines.some((l) => l.includes('"level":"error"'))).toBe(true);
  });

  it('answers every unknown path and method with a JSON 404, and keeps metric labels bounded', async () => {
    const s = setup();
    for (let i = 0; i < 50; i++) {
      const r = await s.app.request(`/random/${randomUUID()}`, { method: i % 2 ? 'PUT' : 'GET' });
      expect(r.status).toBe(404);
      expect(await r.json()).toMatchObject({ error: { code: 'NotFound' } });
    }
    expect((await s.app.request(BACKUP, { method: 'DELETE' })).status).toBe(404);
    const routes = new Set(
      s.metrics
        .render()
        .split('\n')
        .filter((l) => l.startsWith('tideway_webhook_requests_total{'))
        .map((l) => /route="([^"]*)"/.exec(l)?.[1]),
    );
    expect(routes.size).toBeLessThanOrEqual(2);
  });

  it('never writes the secret, the key or a signature into a log line or a response', async () => {
    const s = setup();
    const body = '{}';
    const h = sign(s.secret.value!, body);
    const texts: string[] = [];
    for (const r of [
      await s.post(BACKUP, body, h),
      await s.post(BACKUP, body, h), // replay
      await s.post(BACKUP, body, sign(secretOf(), body)),
      await s.post(BACKUP, '{"x":1}', sign(s.secret.value!, '{"x":1}')),
    ])
      texts.push(await r.text(), JSON.stringify([...r.headers]));
    const all = [...texts, ...s.lines].join('\n');
    expect(s.lines.length).toBeGreaterThanOrEqual(4);
    expect(all).not.toContain(s.secret.value!.slice(6));
    expect(all).not.toContain(h['webhook-signature'].slice(3));
  });
});
