import { beforeAll, describe, expect, it } from 'vitest';
import { neverFires, parseCron } from '../../functions/watcher/cron.ts';
import { CLUSTER_NAME_MAX, specProblems } from '../../shared/rediscluster/admission.ts';
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
      'a directive that loads code',
      obj('RedisCluster', 'x', '{config: {loadmodule: /tmp/evil.so}}'),
      'config must not set loadmodule, enable-module-command, enable-debug-command, enable-protected-configs',
    ],
    [
      'a key that is no directive',
      obj('RedisCluster', 'x', '{config: {max_memory: 1gb}}'),
      'config keys must be redis.conf directive names',
    ],
    [
      'a second line smuggled into a value',
      obj('RedisCluster', 'x', '{config: {maxmemory: "1gb\\nloadmodule /tmp/evil.so"}}'),
      'each value a single line',
    ],
    [
      'writable replicas',
      obj('RedisCluster', 'x', '{config: {slave-read-only: "no"}}'),
      'config replica-read-only (slave-read-only) may only be yes',
    ],
    [
      'more replicas to write to than there are',
      obj('RedisCluster', 'x', '{replicas: 3, config: {min-replicas-to-write: "3"}}'),
      'config min-replicas-to-write (min-slaves-to-write) must be a whole number from 0 to replicas - 1',
    ],
    [
      'a replica lag of 0',
      obj('RedisCluster', 'x', '{config: {min-replicas-max-lag: "0"}}'),
      'config min-replicas-max-lag (min-slaves-max-lag) must be a whole number of seconds, at least 1',
    ],
    [
      "Tideway's role label on the pods",
      obj('RedisCluster', 'x', '{podTemplate: {labels: {tideway.dev/role: master}}}'),
      'podTemplate.labels must not set tideway.dev/* or app.kubernetes.io/name',
    ],
    [
      "Tideway's selector label on the pods",
      obj('RedisCluster', 'x', '{podTemplate: {labels: {app.kubernetes.io/instance: other}}}'),
      'podTemplate.labels must not set',
    ],
    [
      "Tideway's annotation on the pods",
      obj('RedisCluster', 'x', '{podTemplate: {annotations: {tideway.dev/config-hash: x}}}'),
      'podTemplate.annotations must not set tideway.dev/*',
    ],
    [
      'failover after 0s',
      obj('RedisCluster', 'x', '{failover: {after: 0s}}'),
      'failover.after must be at least 3s',
    ],
    [
      'failover after 2s999ms',
      obj('RedisCluster', 'x', '{failover: {after: 2s999ms}}'),
      'failover.after must be at least 3s',
    ],
    [
      'a name with a dot (no Service can carry it)',
      obj('RedisCluster', 'a.b', '{}'),
      'Service name is a DNS-1035 label',
    ],
    [
      "a name too long for the pods' revision label",
      obj('RedisCluster', 'x'.repeat(CLUSTER_NAME_MAX + 1), '{}'),
      'metadata.name must be at most 52 characters',
    ],
    [
      'requests above limits',
      obj('RedisCluster', 'x', '{resources: {requests: {cpu: "2"}, limits: {cpu: 1500m}}}'),
      'resources.requests must not exceed resources.limits',
    ],
    [
      'a schedule for 30 February',
      obj('BackupSchedule', 'x', '{cluster: {name: c}, schedule: "0 0 30 2 *"}'),
      'schedule never fires',
    ],
    [
      'a schedule for 31 April or June',
      obj('BackupSchedule', 'x', '{cluster: {name: c}, schedule: "0 3 31 4,jun *"}'),
      'schedule never fires',
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
      'a starting deadline no tick can meet',
      obj('BackupSchedule', 'x', '{cluster: {name: c}, schedule: "@daily", startingDeadlineSeconds: 0}'),
      'startingDeadlineSeconds must be at least 10',
    ],
    [
      'a maxAge that would delete all but the newest backup',
      obj('BackupSchedule', 'x', '{cluster: {name: c}, schedule: "@daily", retention: {maxAge: 30s}}'),
      'retention.maxAge must be at least 1m',
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

  it('admits exactly the RedisClusters the functions accept (specProblems)', async () => {
    const cases: [string, object][] = [
      ['edge-ok', { replicas: 3, config: { 'min-replicas-to-write': '2', 'replica-read-only': 'YES' } }],
      ['single-ok', { replicas: 1, config: { 'min-slaves-to-write': '0', 'min-replicas-max-lag': '1' } }],
      ['single-bad', { replicas: 1, config: { 'min-replicas-to-write': '1' } }],
      ['huge', { config: { 'min-replicas-to-write': '99999999999999999999' } }],
      ['lag-bad', { config: { 'min-slaves-max-lag': '10s' } }],
      ['case-bad', { config: { LoadModule: '/x.so', Enable_Debug: 'yes' } }],
      ['after-ok', { failover: { after: '0d3s' } }],
      ['after-ok2', { failover: { after: '1d' } }],
      ['after-ok3', { failover: { after: '0.05m' } }],
      ['after-bad', { failover: { after: '0.04m' } }],
      [
        'labels-ok',
        { podTemplate: { labels: { team: 'a' }, annotations: { 'app.kubernetes.io/component': 'x' } } },
      ],
      ['labels-bad', { podTemplate: { labels: { 'app.kubernetes.io/managed-by': 'me' } } }],
      ['x'.repeat(CLUSTER_NAME_MAX), {}],
      ['9lives', {}],
      [
        'limits-ok',
        { resources: { requests: { cpu: 1, memory: '1Gi' }, limits: { cpu: '1000m', memory: '1Gi' } } },
      ],
    ];
    for (const [name, spec] of cases) {
      const out = await apply(obj('RedisCluster', name, JSON.stringify(spec)));
      const problems = specProblems({ metadata: { name }, spec: { replicas: 3, ...spec } });
      expect({ name, admitted: out.includes('created') }).toEqual({ name, admitted: problems.length === 0 });
    }
  });

  it('refuses only schedules that never fire, and fires with either day field (dow OR dom)', async () => {
    for (const [i, schedule] of [
      '0 0 29 2 *',
      '0 0 31 2 1',
      '0 0 31 2,3 *',
      '0 0 30/5 1,2 *',
      '@yearly',
    ].entries()) {
      expect(neverFires(parseCron(schedule))).toBe(false);
      expect(
        await apply(obj('BackupSchedule', `ok-${i}`, `{cluster: {name: c}, schedule: "${schedule}"}`)),
      ).toContain('created');
    }
    for (const [i, schedule] of ['0 0 30-31 feb *', '0  0  31  Apr,6,SEP,11  *', '0 0 30/5 2 *'].entries()) {
      expect(neverFires(parseCron(schedule))).toBe(true);
      expect(
        await apply(obj('BackupSchedule', `never-${i}`, `{cluster: {name: c}, schedule: "${schedule}"}`)),
      ).toContain('schedule never fires');
    }
  });

  it('refuses a range that runs backwards, as the watcher’s cron does, and only that', async () => {
    const accepted = [
      '0 1-5 * * *',
      '0 0 * jan-mar mon-fri',
      '5-5 * * * *',
      '0 0 * * 5-7',
      '0 0 * * sun-7',
      '*/5 0 1 * *',
    ];
    const refused = [
      '30 5-1 * * *',
      '0 0 * mar-jan *',
      '0 0 * * FRI-Mon',
      '0 0 20-10/2 * *',
      '0 0 * * 7-sun',
      '1,9-3 * * * *',
    ];
    for (const [i, schedule] of accepted.entries()) {
      expect(() => parseCron(schedule)).not.toThrow();
      expect(
        await apply(obj('BackupSchedule', `fwd-${i}`, `{cluster: {name: c}, schedule: "${schedule}"}`)),
      ).toContain('created');
    }
    for (const [i, schedule] of refused.entries()) {
      expect(() => parseCron(schedule)).toThrow(/bad range/);
      expect(
        await apply(obj('BackupSchedule', `back-${i}`, `{cluster: {name: c}, schedule: "${schedule}"}`)),
      ).toContain('schedule has a range that runs backwards');
    }
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
    // The next run is in the future: a `date` column would print it as <invalid>.
    const next = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    await b.kubectl(
      ...['patch', 'backupschedule', 'nightly', '-n', ns, '--subresource=status', '--type=merge'],
      ...['-p', JSON.stringify({ status: { nextScheduleTime: next } })],
    );
    const schedules = await b.kubectl('get', 'backupschedule', 'nightly', '-n', ns);
    expect(schedules).toContain(next);
    expect(schedules).not.toContain('<invalid>');
  });
});
