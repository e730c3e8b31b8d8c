import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from './config.ts';
import { loadExport, loadFailureStatus, loadLockKey } from './load-handler.ts';

describe('loading a handler module', () => {
  let dir = '';
  const serverless = () => join(dir, 'serverless.yml');
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-load-'));
    await writeFile(
      join(dir, 'backup.mjs'),
      [
        'export const handler = async () => undefined;',
        "export const lockKey = (e) => ['RedisCluster', e.namespace, e.cluster].join('.');",
        "export const failureStatus = (r, s) => ({ ...s, phase: 'Failed', why: r.reason });",
      ].join('\n'),
    );
    await writeFile(join(dir, 'plain.mjs'), 'export const handler = async () => undefined;\n');
    await writeFile(
      join(dir, 'bad.mjs'),
      "export const handler = async () => undefined;\nexport const lockKey = 'x';\nexport const failureStatus = {};\n",
    );
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('finds the handler, and the lockKey exported next to it', async () => {
    expect(typeof (await loadExport(serverless(), 'backup.handler'))).toBe('function');
    const lockKey = await loadLockKey(serverless(), 'backup.handler');
    expect(lockKey?.({ namespace: 'ns', cluster: 'cache' } as never)).toBe('RedisCluster.ns.cache');
  });

  it('has no lockKey when the module exports none: the event object is locked', async () => {
    expect(await loadLockKey(serverless(), 'plain.handler')).toBeUndefined();
  });

  it('finds the failureStatus exported next to a handler, and none where there is none', async () => {
    const failureStatus = await loadFailureStatus(serverless(), 'backup.handler');
    expect(failureStatus?.({ kind: 'Backup', reason: 'X', message: '' }, { phase: 'Running' })).toEqual({
      phase: 'Failed',
      why: 'X',
    });
    expect(await loadFailureStatus(serverless(), 'plain.handler')).toBeUndefined();
    await expect(loadFailureStatus(serverless(), 'bad.handler')).rejects.toThrow(
      /exports failureStatus, but not/,
    );
  });

  it('refuses a lockKey that is not a function, and a handler that is missing', async () => {
    await expect(loadLockKey(serverless(), 'bad.handler')).rejects.toThrow(ConfigError);
    await expect(loadExport(serverless(), 'plain.missing')).rejects.toThrow(/no exported function missing/);
  });
});
