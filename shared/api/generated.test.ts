import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fillCelBlocks } from './cel-blocks.ts';
import { defaultsOf, generate } from './codegen.ts';
import { crdFiles, crdTexts } from './crds.ts';
import { RedisClusterSpecDefaults, zBackupSchedule, zRedisClusterSpec, zRestoreSpec } from './generated.ts';
import { CEL_BLOCKS } from './rules.ts';

describe('API types generated from crds/', () => {
  it('are in sync with the CRDs (run `npm run gen:api` after changing crds/)', () => {
    const committed = readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'generated.ts'), 'utf8');
    expect(generate(crdTexts()) === committed, 'shared/api/generated.ts is stale: run npm run gen:api').toBe(
      true,
    );
  });

  it('CEL rules in crds/ are the ones generated from the TypeScript lists (run `npm run gen:api`)', () => {
    const files = crdFiles();
    for (const file of Object.keys(CEL_BLOCKS)) expect(files.map((f) => f.file)).toContain(file);
    for (const { file, text } of files)
      expect(
        fillCelBlocks(text, CEL_BLOCKS[file] ?? {}) === text,
        `crds/${file} is stale: run npm run gen:api`,
      ).toBe(true);
  });

  it('carry each field’s default from the CRD, nested as in the spec; an object’s own {} is no default', () => {
    expect(
      defaultsOf({
        properties: {
          size: { type: 'integer', default: 3 },
          name: { type: 'string' },
          storage: { type: 'object', default: {}, properties: { size: { type: 'string', default: '1Gi' } } },
          empty: { type: 'object', default: {}, properties: { x: { type: 'string' } } },
        },
      }),
    ).toEqual({ size: 3, storage: { size: '1Gi' } });
    // What the code assumes when a field is absent is what the API server would have filled in.
    expect(RedisClusterSpecDefaults).toMatchObject({ replicas: 3, failover: { enabled: true, after: '5s' } });
  });

  it('validate what the schemas say', () => {
    expect(zRedisClusterSpec.safeParse({ replicas: 3, config: { hz: '10' } }).success).toBe(true);
    expect(zRedisClusterSpec.safeParse({ replicas: 10 }).success).toBe(false);
    expect(zRedisClusterSpec.safeParse({ version: 'latest' }).success).toBe(false);
    expect(zRestoreSpec.safeParse({ cluster: { name: 'c' }, source: { latest: true } }).success).toBe(true);
    expect(zRestoreSpec.safeParse({ source: { latest: true } }).success).toBe(false);
    expect(
      zBackupSchedule.safeParse({
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'BackupSchedule',
        metadata: { name: 's' },
        spec: {
          cluster: { name: 'c' },
          schedule: '@daily',
          template: {
            store: { s3: { bucket: 'b', credentialsSecret: { name: 'x' } }, compression: 'brotli' },
          },
        },
      }).success,
    ).toBe(false);
  });
});
