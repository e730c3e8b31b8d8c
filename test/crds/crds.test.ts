import { beforeAll, describe, expect, it } from 'vitest';
import { bed, createNamespace } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';

/** Tideway's CRDs on the real API server: defaults applied, bad input refused with a useful message. */
describe("Tideway's CRDs", () => {
  const b = bed();
  let ns = '';
  const apply = async (yaml: string) => {
    try {
      return await b.kubectlIn(yaml, 'apply', '-n', ns, '-f', '-');
    } catch (error) {
      return `ERROR ${(error as { stderr?: string }).stderr ?? String(error)}`;
    }
  };
  const obj = (kind: string, name: string, spec: string) =>
    `apiVersion: tideway.dev/v1alpha1\nkind: ${kind}\nmetadata: {name: ${name}}\nspec: ${spec}\n`;

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'crds');
  });

  it('accepts a valid RedisCluster and applies the documented defaults', async () => {
    expect(await apply(obj('RedisCluster', 'cache', '{config: {maxmemory-policy: allkeys-lru}}'))).toContain(
      'created',
    );
    const spec = JSON.parse(await b.kubectl('get', 'rdc', 'cache', '-n', ns, '-o', 'jsonpath={.spec}'));
    expect(spec).toMatchObject({
      version: '7.0',
      replicas: 3,
      failover: { enabled: true, after: '5s' },
      storage: { size: '1Gi' },
    });
  });

  it.each([
    ['replicas 0', obj('RedisCluster', 'x', '{replicas: 0}'), 'greater than or equal to 1'],
    ['replicas 10', obj('RedisCluster', 'x', '{replicas: 10}'), 'less than or equal to 9'],
    [
      'an owned directive',
      obj('RedisCluster', 'x', '{config: {Port: "7000"}}'),
      'config must not set directives Tideway owns: port, bind',
    ],
    [
      'both restore sources',
      obj('Restore', 'x', '{cluster: {name: c}, source: {backup: {name: b}, latest: true}}'),
      'exactly one of backup, latest or s3',
    ],
    [
      'no restore source',
      obj('Restore', 'x', '{cluster: {name: c}, source: {}}'),
      'exactly one of backup, latest or s3',
    ],
    [
      'a minute of 61',
      obj('BackupSchedule', 'x', '{cluster: {name: c}, schedule: "61 * * * *"}'),
      'schedule must be a 5-field cron expression',
    ],
    [
      'words for a schedule',
      obj('BackupSchedule', 'x', '{cluster: {name: c}, schedule: "every day"}'),
      'schedule must be a 5-field cron expression',
    ],
    [
      'a bad time zone',
      obj('BackupSchedule', 'x', '{cluster: {name: c}, schedule: "@daily", timeZone: "Not a zone!"}'),
      'spec.timeZone',
    ],
    [
      'an unknown compression',
      obj(
        'Backup',
        'x',
        '{cluster: {name: c}, store: {s3: {bucket: backups, credentialsSecret: {name: s}}, compression: lz4}}',
      ),
      'supported values: "zstd", "gzip", "none"',
    ],
  ])('refuses %s with a message that says what to fix', async (_, yaml, message) => {
    expect(await apply(yaml)).toContain(message);
  });

  it('refuses to change what a Backup backs up, but lets deletionPolicy change', async () => {
    expect(await apply(obj('Backup', 'b1', '{cluster: {name: cache}}'))).toContain('created');
    expect(await apply(obj('Backup', 'b1', '{cluster: {name: other}}'))).toContain(
      "a Backup's cluster, store and source cannot change",
    );
    expect(await apply(obj('Backup', 'b1', '{cluster: {name: cache}, deletionPolicy: Retain}'))).toContain(
      'configured',
    );
  });

  it('lists every kind under the tideway category with its printer columns', async () => {
    await apply(
      obj(
        'BackupSchedule',
        'nightly',
        '{cluster: {name: cache}, schedule: "0 3 * * *", timeZone: Europe/Berlin}',
      ),
    );
    const out = await b.kubectl('get', 'tideway', '-n', ns);
    expect(out).toMatch(/NAME\s+VERSION\s+READY\s+MASTER\s+PHASE\s+AGE/);
    expect(out).toMatch(/NAME\s+CLUSTER\s+SCHEDULE\s+SUSPEND\s+LAST\s+NEXT/);
    expect(out).toMatch(/NAME\s+CLUSTER\s+PHASE\s+SIZE\s+AGE/);
  });
});
