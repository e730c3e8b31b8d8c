import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { PARTITIONS, STREAM } from '../../shared/events/subjects.ts';
import { parseServerless } from '../../shared/runtime/config.ts';
import { consumerName } from '../../shared/runtime/durables.ts';
import { type RbacDoc, SYSTEM_NAMESPACE } from '../install.ts';
import { chartFunctions, GRACE_MARGIN_SECONDS, WATCH_NAMESPACE } from './functions.ts';
import { CHART_DIR, drift, generateChart, readSources, type Sources } from './generate.ts';
import { chartRbac, RbacError, type RbacFile, RELEASE_NAMESPACE } from './rbac.ts';

const sources = readSources();

/** A copy of the checkout's sources with serverless.yml changed by `edit`. */
type Doc = { functions: Record<string, Record<string, unknown>> };
const withServerless = (edit: (doc: Doc) => void): Sources => {
  const doc = parse(sources.serverless) as Doc;
  edit(doc);
  return { ...sources, serverless: stringify(doc) };
};

describe('the chart is generated from serverless.yml, infra/rbac and crds/', () => {
  it('is in sync (run `node infra/helm/generate.ts` after changing them)', () => {
    expect(drift(generateChart(sources))).toEqual([]);
  });

  it('goes stale when serverless.yml changes a function', () => {
    const bigger = withServerless((d) => {
      d.functions.backup = { ...d.functions.backup, memorySize: 1024 };
    });
    expect(drift(generateChart(bigger))).toEqual(['generated/functions.yaml']);
    const more = withServerless((d) => {
      d.functions.extra = { handler: 'functions/extra/index.handler', events: d.functions.health?.events };
    });
    // A function without its ServiceAccount and roles has no place in the chart.
    expect(() => generateChart(more)).toThrow('infra/rbac/extra.yaml');
  });

  it('goes stale when a CRD changes, and when the chart holds one crds/ does not', () => {
    const file = Object.keys(sources.crds)[0] ?? '';
    const changed = { ...sources, crds: { ...sources.crds, [file]: `${sources.crds[file]}# changed\n` } };
    expect(drift(generateChart(changed))).toEqual([`crds/${file}`]);
    const { [file]: _gone, ...fewer } = sources.crds;
    expect(drift(generateChart({ ...sources, crds: fewer }))).toEqual([`crds/${file}`]);
  });

  it('goes stale when a role changes', () => {
    const rbac = sources.rbac.map((f) =>
      f.fn === 'watcher'
        ? { ...f, docs: f.docs.map((d) => (d.kind === 'ClusterRole' ? { ...d, rules: [] } : d)) }
        : f,
    );
    expect(drift(generateChart({ ...sources, rbac }))).toEqual(['generated/rbac.yaml']);
  });

  it('names the chart after the package version', () => {
    const pkg = JSON.parse(readFileSync(join(CHART_DIR, '..', '..', '..', 'package.json'), 'utf8'));
    const chart = parse(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8'));
    expect(chart.appVersion).toBe(pkg.version);
  });
});

describe("docs/helm.md's table of functions", () => {
  it('says what the chart says', () => {
    const docs = readFileSync(join(CHART_DIR, '..', '..', '..', 'docs', 'helm.md'), 'utf8');
    const table = docs.slice(docs.indexOf('| Function'));
    const rows = table
      .slice(0, table.indexOf('\n\n'))
      .split('\n')
      .slice(2)
      .map((l) =>
        l
          .split('|')
          .slice(1, -1)
          .map((c) => c.trim().replace(/`/g, '')),
      );
    const values = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8'));
    const fns = chartFunctions(parseServerless(sources.serverless));
    expect(rows).toEqual(
      Object.entries(fns).map(([name, f]) => [
        name,
        f.service ? 'service' : 'events',
        String(f.replicas),
        String(f.memoryMiB ?? values.resources.defaultMemoryMiB),
        String(f.terminationGracePeriodSeconds),
        f.consumer?.cluster ?? '—',
        f.consumer ? String(f.consumer.lagThreshold) : '—',
      ]),
    );
  });
});

describe('chartFunctions', () => {
  const config = parseServerless(`
service: t
provider: { name: tideway }
functions:
  feeder:
    handler: f/index.start
    memorySize: 384
    environment: { TIDEWAY_FEEDER_PORT: "9191", TIDEWAY_RESTORE_FEED_HOST: "" }
    tideway: { service: true, replicas: 1 }
  eater:
    handler: e/index.handler
    timeout: 120
    reservedConcurrency: 3
    events: [{ cloudevent: { type: dev.tideway.resource.*, kind: RedisCluster } }]
    tideway: { replicas: 5 }
`);
  const fns = chartFunctions(config);

  it('gives an event function its consumer, as the runtime names it, and its lag per replica', () => {
    expect(fns.eater?.consumer).toEqual({
      stream: STREAM,
      cluster: consumerName('eater'),
      namespaced: consumerName('eater', WATCH_NAMESPACE),
      partitions: PARTITIONS,
      lagThreshold: 3,
    });
    expect(fns.eater).toMatchObject({ service: false, replicas: 5 });
    expect(fns.eater?.memoryMiB).toBeUndefined();
    expect(fns.eater?.terminationGracePeriodSeconds).toBe(120 + GRACE_MARGIN_SECONDS);
  });

  it('gives a service no consumer, its port from TIDEWAY_<NAME>_PORT and downward fields', () => {
    expect(fns.feeder).toMatchObject({ service: true, replicas: 1, memoryMiB: 384, httpPort: 9191 });
    expect(fns.feeder?.nodeOptions).toBe('--max-old-space-size=192 --max-semi-space-size=6');
    expect(fns.eater?.nodeOptions).toBeUndefined();
    expect(fns.feeder?.consumer).toBeUndefined();
    expect(fns.feeder?.fieldEnv).toEqual({ TIDEWAY_RESTORE_FEED_HOST: 'status.podIP' });
    expect(fns.eater?.httpPort).toBeUndefined();
    expect(fns.eater?.fieldEnv).toEqual({});
  });

  it('refuses a port that is not one', () => {
    const bad = parseServerless(
      'service: t\nprovider: { name: tideway }\nfunctions:\n  w:\n    handler: w/i.start\n    environment: { TIDEWAY_W_PORT: "80x" }\n    tideway: { service: true }\n',
    );
    expect(() => chartFunctions(bad)).toThrow('functions.w.environment.TIDEWAY_W_PORT is 80x');
  });
});

describe('chartRbac', () => {
  const sa = (fn: string): RbacDoc => ({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: `tideway-${fn}`, namespace: SYSTEM_NAMESPACE },
  });
  const binding = (fn: string, role: string): RbacDoc => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `tideway-${fn}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ kind: 'ServiceAccount', name: `tideway-${fn}`, namespace: SYSTEM_NAMESPACE }],
  });
  const role = (name: string, rule: Record<string, string[]>): RbacDoc =>
    ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [rule],
    }) as RbacDoc;
  const file = (fn: string, rule = { apiGroups: [''], resources: ['pods'], verbs: ['get'] }): RbacFile => ({
    fn,
    docs: [sa(fn), role(`tideway-${fn}`, rule), binding(fn, `tideway-${fn}`)],
  });

  it('puts what infra/rbac puts in tideway-system into the release namespace, and labels it', () => {
    const out = chartRbac([file('a')], ['a']);
    expect(out.roles.map((d) => d.kind)).toEqual(['ClusterRole']);
    expect(out.cluster.map((d) => [d.kind, d.metadata.namespace])).toEqual([
      ['ServiceAccount', RELEASE_NAMESPACE],
      ['ClusterRoleBinding', undefined],
    ]);
    expect(out.cluster[1]?.subjects?.[0]?.namespace).toBe(RELEASE_NAMESPACE);
    for (const d of [...out.roles, ...out.cluster, ...out.namespaced])
      expect(d.metadata.labels?.['app.kubernetes.io/component']).toBe('a');
    expect(JSON.stringify(out)).not.toContain(SYSTEM_NAMESPACE);
  });

  it('binds a namespaced installation in the served namespace only, as infra/install.ts does', () => {
    const out = chartRbac([file('a')], ['a']);
    expect(out.namespaced.map((d) => [d.kind, d.metadata.name, d.metadata.namespace])).toEqual([
      ['ServiceAccount', `tideway-a-ns-${WATCH_NAMESPACE}`, RELEASE_NAMESPACE],
      ['RoleBinding', 'tideway-a', WATCH_NAMESPACE],
    ]);
  });

  it('refuses a function without its ServiceAccount, naming the file to write', () => {
    expect(() => chartRbac([file('a')], ['a', 'b'])).toThrow(RbacError);
    expect(() => chartRbac([file('a')], ['a', 'b'])).toThrow('infra/rbac/b.yaml');
  });

  it('refuses admin roles and wildcards', () => {
    const admin: RbacFile = { fn: 'a', docs: [sa('a'), binding('a', 'cluster-admin')] };
    expect(() => chartRbac([admin], ['a'])).toThrow('binds cluster-admin');
    for (const rule of [
      { apiGroups: ['*'], resources: ['pods'], verbs: ['get'] },
      { apiGroups: [''], resources: ['*'], verbs: ['get'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['*'] },
    ])
      expect(() => chartRbac([file('a', rule)], ['a'])).toThrow('wildcard');
  });
});
