import { createHmac } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { bed, createNamespace } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { fixtures, newSecret, startWebhook, type WebhookServer } from './support.ts';

/** A small seeded PRNG (mulberry32): a failing run can be replayed with WEBHOOK_FUZZ_SEED. */
const prng = (seed: number) => {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const chars = (alphabet: string, max: number) =>
    Array.from({ length: int(max + 1) }, () => alphabet[int(alphabet.length)]).join('');
  return { next, int, pick, chars };
};

type Req = {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The untouched endpoint this request targets, when the path was not mutated. */
  endpoint?: 'restore' | 'backup';
  cluster?: string;
};

/** The server's default body limit (TIDEWAY_WEBHOOK_MAX_BODY_BYTES). */
const MAX_BODY = 16_384;

/** Codes the server may give a request that is not correctly signed: nothing past the signature. */
const BEFORE_AUTH = new Set([
  'MissingSignature',
  'MalformedSignature',
  'StaleTimestamp',
  'BadSignature',
  'WebhookNotConfigured',
  'WebhookSecretInvalid',
  'InvalidPath',
  'NotFound',
  'NamespaceNotServed',
  'BodyTooLarge',
]);

/**
 * A bounded fuzz run: ≥ 1,000 random and mutated requests (plus raw malformed HTTP) against the
 * webhook on the test bed. None may get a 5xx or create an object; one that is not correctly
 * signed (judged here, with node:crypto) may only get a refusal from before the signature check;
 * a correctly signed one with a body the endpoint does not take gets a 400. The namespace's state
 * (the cluster already has a Restore pending and no backup store) is such that even a valid
 * request cannot create anything, so "nothing created" holds by construction and is checked.
 */
describe('webhook fuzz', () => {
  const b = bed();
  const secret = newSecret();
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const seed = Number(process.env.WEBHOOK_FUZZ_SEED ?? Date.now() % 2 ** 31);
  const r = prng(seed);
  let ns: string;
  let hook: WebhookServer;
  let f: ReturnType<typeof fixtures>;
  let webhookMade: () => Promise<string[]>;

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'webhook-fuzz');
    f = fixtures(b, ns);
    await f.secret(secret);
    await f.cluster('cache', { store: false });
    await f.backup('done', 'cache', 'Completed');
    // A restore someone started with kubectl, still pending: every valid restore request is a 409.
    await b.custom.createNamespacedCustomObject({
      ...TIDEWAY_KINDS.Restore,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'Restore',
        metadata: { name: 'by-hand' },
        spec: { cluster: { name: 'cache' }, source: { latest: true } },
      },
    });
    // Objects a webhook made for one of this run's requests: other files' webhook tests make
    // theirs at the same time in the suite, under other webhook-ids.
    webhookMade = async () =>
      (
        await Promise.all(
          (['Restore', 'Backup'] as const).map(async (kind) =>
            (
              (await b.custom.listClusterCustomObject({
                ...TIDEWAY_KINDS[kind],
                labelSelector: 'tideway.dev/requested-by=webhook',
              })) as {
                items: {
                  metadata: { namespace: string; name: string; annotations?: Record<string, string> };
                }[];
              }
            ).items
              .filter((o) => signedIds.has(o.metadata.annotations?.['tideway.dev/webhook-id'] ?? ''))
              .map((o) => `${kind}/${o.metadata.namespace}/${o.metadata.name}`),
          ),
        )
      ).flat();
    // Not limited to one namespace (others have no Secret), and limits out of the way.
    hook = await startWebhook(b, {
      env: {
        TIDEWAY_WEBHOOK_SOURCE_RATE: '100000',
        TIDEWAY_WEBHOOK_SOURCE_BURST: '100000',
        TIDEWAY_WEBHOOK_NAMESPACE_RATE: '100000',
        TIDEWAY_WEBHOOK_NAMESPACE_BURST: '100000',
        TIDEWAY_WEBHOOK_ID_RATE: '100000',
        TIDEWAY_WEBHOOK_ID_BURST: '100000',
      },
    });
  });
  afterAll(async () => {
    await hook?.stop();
    expect(hook?.output() ?? '').not.toContain(secret.slice('whsec_'.length));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  const now = () => Math.floor(Date.now() / 1000);
  const mac = (id: string, ts: string, body: string) =>
    createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  /** Every webhook-id this run signed a request with. */
  const signedIds = new Set<string>();
  const sign = (q: Req, o: { id?: string; ts?: string } = {}) => {
    const id = o.id ?? `fz_${r.chars('abcdef0123456789', 16)}x`;
    signedIds.add(id);
    const ts = o.ts ?? String(now());
    q.headers['webhook-id'] = id;
    q.headers['webhook-timestamp'] = ts;
    q.headers['webhook-signature'] = `v1,${mac(id, ts, q.body)}`;
    return q;
  };
  /** Whether the request is correctly signed, by the spec, computed independently of the server. */
  const correctlySigned = (q: Req): boolean | 'unsure' => {
    const id = q.headers['webhook-id'];
    const ts = q.headers['webhook-timestamp'];
    const sig = q.headers['webhook-signature'];
    if (!id || !ts || !sig) return false;
    if (!/^[\x21-\x2d\x2f-\x7e]{1,256}$/.test(id) || !/^\d{1,12}$/.test(ts)) return false;
    const skew = Math.abs(now() - Number(ts));
    if (skew > 290 && skew < 310) return 'unsure'; // the clock moved on while it was sent
    const entries = sig.split(' ').filter(Boolean);
    return skew <= 300 && entries.length <= 16 && entries.includes(`v1,${mac(id, ts, q.body)}`);
  };

  const NAMES = [
    'cache',
    'done',
    'nope',
    'by-hand',
    'Cache',
    'a'.repeat(300),
    '..',
    '%2e%2e',
    'c_a',
    'ç',
    '',
  ];
  const ANY = 'abcxyz0123456789-._~!$&\'()*+,;=:@%/?#[] "{}<>\\^`|\t';
  const randomJson = (depth = 0): unknown => {
    switch (r.int(depth > 3 ? 4 : 8)) {
      case 0:
        return r.int(2) === 0;
      case 1:
        return r.pick([0, -1, 1e308, 2 ** 53 + 1, 0.5, Number.MAX_SAFE_INTEGER]);
      case 2:
        return r.chars(ANY, 20);
      case 3:
        return null;
      case 4:
        return Array.from({ length: r.int(4) }, () => randomJson(depth + 1));
      default:
        return Object.fromEntries(
          Array.from({ length: r.int(4) }, () => [
            r.pick(['backup', 'latest', 'store', 'source', '__proto__', 'constructor', r.chars(ANY, 8)]),
            randomJson(depth + 1),
          ]),
        );
    }
  };
  const validBody = (endpoint: 'restore' | 'backup') =>
    endpoint === 'backup'
      ? r.pick(['{}', ' { } '])
      : r.pick(['{"backup":"done"}', '{"latest":true}', '{"backup":"nope"}']);
  const mutateString = (s: string) => {
    if (s.length === 0) return r.chars(ANY, 5);
    const i = r.int(s.length);
    switch (r.int(5)) {
      case 0:
        return s.slice(0, i) + s.slice(i + 1);
      case 1:
        return s.slice(0, i) + String.fromCharCode(s.charCodeAt(i) ^ (1 << r.int(7))) + s.slice(i + 1);
      case 2:
        return s.slice(0, i) + r.chars(ANY, 3) + s.slice(i);
      case 3:
        return s.slice(0, i);
      default:
        return s + s.slice(i);
    }
  };
  const randomBody = () =>
    r.pick([
      () => JSON.stringify(randomJson()),
      () => mutateString(validBody(r.pick(['restore', 'backup'] as const))),
      () => '['.repeat(2000 + r.int(5000)) + ']'.repeat(r.int(7000)),
      () => `{"backup":"${'d'.repeat(r.int(400))}"}`,
      () =>
        JSON.stringify({
          specversion: '1.0',
          id: r.chars(ANY, 5),
          source: r.chars(ANY, 5),
          type: r.pick(['dev.tideway.restore.requested', 'dev.tideway.backup.requested', r.chars(ANY, 10)]),
          data: randomJson(),
        }),
      () => r.chars(ANY, 50),
      () => 'x'.repeat(16_000 + r.int(2000)),
    ])();

  const base = (): Req => {
    const endpoint = r.pick(['restore', 'backup'] as const);
    const cluster = r.pick(['cache', 'cache', 'nope']);
    return {
      method: 'POST',
      path: `/v1/namespaces/${ns}/redisclusters/${cluster}/${endpoint}`,
      headers: { 'content-type': 'application/json' },
      body: validBody(endpoint),
      endpoint,
      cluster,
    };
  };
  const CONTENT_TYPES = [
    'application/json',
    'application/cloudevents+json',
    'application/cloudevents-batch+json',
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/json; charset=latin1',
    '',
  ];
  /** One mutation that leaves the signature as it was (so it is usually no longer right). */
  const mutate = (q: Req) => {
    switch (r.int(12)) {
      case 0:
        q.body = mutateString(q.body);
        break;
      case 1:
        q.headers['webhook-id'] = r.pick([
          mutateString(q.headers['webhook-id'] ?? ''),
          r.chars(ANY.replace(/[\t "]/g, ''), 300),
          'a.b',
        ]);
        break;
      case 2:
        q.headers['webhook-timestamp'] = r.pick([
          String(now() + r.pick([-1, 1]) * (400 + r.int(10 ** 6))),
          String(now() - r.int(200)),
          `${now()}.0`,
          '-1',
          '9'.repeat(20),
          'now',
        ]);
        break;
      case 3:
        q.headers['webhook-signature'] = r.pick([
          mutateString(q.headers['webhook-signature'] ?? ''),
          (q.headers['webhook-signature'] ?? '').replace('v1,', r.pick(['v1a,', 'v2,', 'V1,', ''])),
          Array(20).fill(q.headers['webhook-signature']).join(' '),
          `v1,${Buffer.alloc(32).toString('base64')}`,
          '',
        ]);
        break;
      case 4:
        delete q.headers[r.pick(['webhook-id', 'webhook-timestamp', 'webhook-signature'])];
        break;
      case 5:
        q.headers['content-type'] = r.pick(CONTENT_TYPES);
        break;
      case 6:
        q.method = r.pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']);
        if (q.method === 'GET' || q.method === 'HEAD') q.body = '';
        q.endpoint = undefined;
        break;
      case 7: {
        const parts = q.path.split('/');
        const i = 1 + r.int(parts.length - 1);
        parts[i] = r.pick([...NAMES, encodeURIComponent(r.chars(ANY, 8)), mutateString(parts[i] ?? '')]);
        q.path = r.pick([
          parts.join('/'),
          `${q.path}/`,
          q.path.toUpperCase(),
          `${q.path}?x=${r.chars('abc', 3)}`,
          `//${q.path}`,
        ]);
        if (!q.path.startsWith('/')) q.path = `/${q.path}`;
        q.endpoint = undefined;
        break;
      }
      case 8:
        q.headers[`ce-${r.pick(['specversion', 'type', 'id', 'source', 'subject'])}`] = r.pick([
          '1.0',
          'dev.tideway.restore.requested',
          'dev.tideway.backup.requested',
          encodeURIComponent(r.chars(ANY, 10)),
          '%FF%FE',
        ]);
        break;
      case 9:
        q.body = randomBody();
        break;
      case 10:
        q.path = r.pick([
          `/v1/namespaces/${ns}/restores/${r.pick(NAMES)}`,
          `/v1/namespaces/${ns}/backups/${r.pick(NAMES)}`,
          `/v1/namespaces/${r.pick(['default', 'kube-system', 'nope', 'x'.repeat(70)])}/redisclusters/cache/restore`,
          '/healthz',
          '/metrics',
          '/openapi.json',
          `/${r.chars(ANY.replace(/[?#%]/g, ''), 30)}`,
        ]);
        q.endpoint = undefined;
        break;
      default:
        q.headers[r.pick(['x-forwarded-for', 'user-agent', 'transfer-encoding-x', 'webhook-extra'])] =
          r.chars(ANY.replace(/[\t]/g, ''), 40);
    }
    return q;
  };

  /** A request: random, a correctly signed one mutated afterwards, or one signed after a random body. */
  const generate = (): Req => {
    const kind = r.int(10);
    if (kind < 2) {
      const q = base();
      q.method = r.pick(['GET', 'POST', 'PUT', 'DELETE']);
      if (q.method === 'GET' || q.method === 'DELETE') q.body = '';
      q.endpoint = undefined;
      for (let i = 0; i < 1 + r.int(4); i++) mutate(q);
      return q;
    }
    if (kind < 6) {
      const q = sign(base());
      for (let i = 0; i < 1 + r.int(3); i++) mutate(q);
      return q;
    }
    // Correctly signed, with a body the endpoint may or may not take.
    const q = base();
    q.body = r.int(4) === 0 ? validBody(q.endpoint ?? 'restore') : randomBody();
    if (r.int(5) === 0) q.headers['content-type'] = r.pick(CONTENT_TYPES);
    return sign(q);
  };

  /** The body is one the endpoint takes, judged here: plain JSON of exactly the documented shapes. */
  const takesBody = (q: Req) => {
    if (q.headers['content-type'] !== 'application/json') return 'unsure';
    if (Object.keys(q.headers).some((h) => h.startsWith('ce-'))) return 'unsure';
    // Empty: what a status GET signs; never taken as a POST's body.
    if (q.body.trim() === '') return false;
    try {
      const v = JSON.parse(q.body) as unknown;
      if (q.endpoint === 'backup') return JSON.stringify(v) === '{}';
      const s = JSON.stringify(v);
      return s === '{"latest":true}' || /^\{"backup":"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?"\}$/.test(s);
    } catch {
      return false;
    }
  };

  it('1,000+ random and mutated requests: no 5xx, nothing created, no way past the signature', async () => {
    const before = await f.objects();
    const madeBefore = await webhookMade();
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    let signedSent = 0;
    const one = async () => {
      const q = generate();
      let res: Response;
      try {
        res = await fetch(hook.url + q.path, {
          method: q.method,
          headers: Object.fromEntries(Object.entries(q.headers).filter(([, v]) => v !== '')),
          ...(q.method === 'GET' || q.method === 'HEAD' ? {} : { body: q.body }),
        });
      } catch (error) {
        // Requests fetch itself refuses to send (invalid header bytes, a bad URL) never left.
        if (error instanceof TypeError && !(error.cause && String(error.cause).includes('ECONN'))) return;
        throw error;
      }
      sent++;
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const describe = () =>
        `${q.method} ${q.path} ${JSON.stringify(q.headers).slice(0, 300)} ${q.body.slice(0, 120)} → ${res.status} ${text.slice(0, 200)}`;
      if (res.status >= 500) return void problems.push(`5xx: ${describe()}`);
      if (!q.path.startsWith('/v1/') || q.method === 'HEAD') return;
      // Node's HTTP parser answers headers beyond its limit itself, before the app sees them.
      if (res.status === 431) return;
      let code: string | undefined;
      try {
        code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
      } catch {
        return void problems.push(`not JSON: ${describe()}`);
      }
      if (
        Buffer.byteLength(q.body) > MAX_BODY &&
        q.method === 'POST' &&
        code !== 'BodyTooLarge' &&
        code !== 'NotFound'
      )
        return void problems.push(`an oversized body was not a 413: ${describe()}`);
      if (res.status >= 300 && !code) return void problems.push(`no error code: ${describe()}`);
      const signed = correctlySigned(q);
      if (signed === true) signedSent++;
      if (signed === false && !BEFORE_AUTH.has(code ?? 'OK'))
        return void problems.push(`past the signature unsigned (${code}): ${describe()}`);
      if (
        signed === true &&
        q.endpoint &&
        q.method === 'POST' &&
        Buffer.byteLength(q.body) <= MAX_BODY &&
        takesBody(q) === false &&
        res.status !== 400
      )
        problems.push(`a body the endpoint does not take was not a 400: ${describe()}`);
    };
    const TOTAL = 1200;
    let started = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (started < TOTAL) {
          started++;
          await one();
        }
      }),
    );
    // Raw HTTP a client library would not send: the server answers 4xx or closes, never 5xx.
    const raw = await Promise.all(
      Array.from({ length: 100 }, async () => {
        const line = r.pick([
          `POST /v1/namespaces/${ns}/redisclusters/cache/restore HTTP/1.1`,
          `GET /${r.chars(ANY, 20)} HTTP/1.1`,
          `${r.chars('ABCXYZ', 8)} / HTTP/1.1`,
          'POST / HTTP/9.9',
          r.chars(ANY, 60),
        ]);
        const headers = r.pick([
          'Content-Length: 5\r\n',
          'Content-Length: -1\r\n',
          'Content-Length: 5\r\nContent-Length: 6\r\n',
          'Transfer-Encoding: chunked\r\n',
          'Transfer-Encoding: chunked\r\nContent-Length: 3\r\n',
          `X-${r.chars('abc', 5)}: ${'v'.repeat(r.int(20_000))}\r\n`,
          `${r.chars(ANY, 10)}\r\n`,
          'webhook-id: a\r\nwebhook-timestamp: 1\r\nwebhook-signature: v1,\x01\r\n',
        ]);
        const body = r.pick([
          '{}',
          'zz\r\n',
          '5\r\nhello\r\n0\r\n\r\n',
          'ffffffffffff\r\nx',
          r.chars(ANY, 40),
        ]);
        return rawStatus(`${line}\r\nHost: x\r\nConnection: close\r\n${headers}\r\n${body}`);
      }),
    );
    for (const s of raw) if (s >= 500) problems.push(`raw request answered ${s}`);

    expect(problems, `seed ${seed}`).toEqual([]);
    expect(sent, `seed ${seed}`).toBeGreaterThanOrEqual(1000);
    expect(
      signedSent,
      `seed ${seed}: some correctly signed requests reach the checks behind the signature`,
    ).toBeGreaterThan(200);
    expect(await f.objects(), `seed ${seed}`).toEqual(before);
    // Anywhere in the cluster, for any id this run signed: nothing new.
    expect(
      (await webhookMade()).filter((x) => !madeBefore.includes(x)),
      `seed ${seed}`,
    ).toEqual([]);
    expect((await hook.send('GET', '/readyz')).status).toBe(200);
    process.stderr.write(
      `[webhook fuzz] seed ${seed}: ${sent} requests, ${signedSent} correctly signed, statuses ${JSON.stringify(Object.fromEntries(statuses))}\n`,
    );
  });

  /** The status of a raw HTTP exchange, 0 when the server closed without one. */
  const rawStatus = (request: string) =>
    new Promise<number>((resolve) => {
      const url = new URL(hook.url);
      const socket = connect({ host: url.hostname, port: Number(url.port) });
      let reply = '';
      const done = () => {
        socket.destroy();
        resolve(Number(/^HTTP\/1\.[01] (\d{3})/.exec(reply)?.[1] ?? 0));
      };
      socket.setTimeout(5000, done);
      socket.on('data', (d) => {
        reply += d.toString('latin1');
      });
      socket.on('end', done);
      socket.on('close', done);
      socket.on('error', done);
      socket.end(Buffer.from(request, 'latin1'));
    });
});
