import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../shared/runtime/logger.ts';
import { createMetrics } from '../../shared/runtime/metrics.ts';
import { createApp, ROUTES } from './app.ts';
import { ERROR_CODES, ERROR_STATUS } from './errors.ts';
import { OPENAPI_FILE } from './index.ts';
import { zBackupRequest, zRestoreRequest } from './intent.ts';
import { localMutex } from './mutex.ts';
import { tokenBuckets } from './rate-limit.ts';
import { REQUEST_TYPES } from './request.ts';
import { secretKeys } from './secrets.ts';

type Operation = {
  requestBody?: { content: Record<string, { schema: unknown }> };
  parameters?: ({ $ref: string } | { name: string; in: string })[];
  responses: Record<string, unknown>;
};
type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};
const doc = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Doc;

const app = () => {
  const kube = {
    webhookSecret: async () => undefined,
    get: async () => undefined,
    list: async () => [],
    create: async () => undefined,
    ready: async () => true,
  };
  return createApp({
    kube,
    keys: secretKeys(kube),
    mutex: localMutex(),
    log: createLogger({}, { write: () => undefined }),
    metrics: createMetrics(),
    now: () => Date.now(),
    limits: {
      source: tokenBuckets({ rate: 1, burst: 1 }),
      namespace: tokenBuckets({ rate: 1, burst: 1 }),
      id: tokenBuckets({ rate: 1, burst: 1 }),
    },
    maxBodyBytes: 1024,
    ready: async () => true,
    openapi: doc,
  });
};

/** hono's `/a/:b` as OpenAPI's `/a/{b}`. */
const openapiPath = (p: string) => p.replace(/:(\w+)/g, '{$1}');
const schemaOf = (s: z.ZodType) => {
  const { $schema: _, ...rest } = z.toJSONSchema(s) as Record<string, unknown>;
  return rest;
};

describe('the OpenAPI document', () => {
  it('describes exactly the routes the app serves', () => {
    const served = app()
      .routes.filter((r) => r.method !== 'ALL')
      .map((r) => `${r.method} ${openapiPath(r.path)}`)
      .sort();
    const documented = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(documented).toEqual(served);
    expect(
      Object.values(ROUTES)
        .map(openapiPath)
        .every((p) => p in doc.paths),
    ).toBe(true);
  });

  it('is the document the app serves', async () => {
    const res = await app().request('/openapi.json');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(doc);
    expect(doc.openapi).toBe('3.1.0');
  });

  it('has the request bodies the code accepts, in both encodings', () => {
    expect(doc.components.schemas.RestoreRequest).toEqual(schemaOf(zRestoreRequest));
    expect(doc.components.schemas.BackupRequest).toEqual(schemaOf(zBackupRequest));
    const restore = doc.paths[openapiPath(ROUTES.restore)]?.post;
    const backup = doc.paths[openapiPath(ROUTES.backup)]?.post;
    expect(Object.keys(restore?.requestBody?.content ?? {})).toEqual([
      'application/json',
      'application/cloudevents+json',
    ]);
    expect(JSON.stringify(restore?.requestBody?.content['application/cloudevents+json'])).toContain(
      REQUEST_TYPES.Restore,
    );
    expect(JSON.stringify(backup?.requestBody?.content['application/cloudevents+json'])).toContain(
      REQUEST_TYPES.Backup,
    );
  });

  it('lists every error code, and every status a signed route can answer', () => {
    const schema = doc.components.schemas.Error as {
      properties: { error: { properties: { code: { enum: string[] } } } };
    };
    expect(schema.properties.error.properties.code.enum.sort()).toEqual([...ERROR_CODES].sort());
    const signed = Object.values(ROUTES).map(openapiPath);
    for (const path of signed)
      for (const op of Object.values(doc.paths[path] ?? {}))
        for (const status of ['400', '401', '404', '413', '429', '503'])
          expect(Object.keys(op.responses), `${path} ${status}`).toContain(status);
    for (const path of [ROUTES.restore, ROUTES.backup].map(openapiPath))
      expect(Object.keys(doc.paths[path]?.post?.responses ?? {})).toEqual(
        expect.arrayContaining(['202', '409']),
      );
    // 500 is the one status no document promises (it means a bug); every other is documented.
    const statuses = new Set(
      Object.values(ERROR_STATUS)
        .filter((s) => s !== 500)
        .map(String),
    );
    const documented = new Set(
      Object.values(doc.paths).flatMap((ops) =>
        Object.values(ops).flatMap((op) => Object.keys(op.responses)),
      ),
    );
    for (const s of statuses) expect(documented.has(s), s).toBe(true);
  });

  it('documents the signature headers on every signed operation, and none on the open ones', () => {
    for (const [path, ops] of Object.entries(doc.paths))
      for (const op of Object.values(ops)) {
        const refs = (op.parameters ?? []).map((p) => ('$ref' in p ? p.$ref : p.name));
        const signed = refs.includes('#/components/parameters/webhookSignature');
        expect(signed, path).toBe(path.startsWith('/v1/'));
      }
  });
});
