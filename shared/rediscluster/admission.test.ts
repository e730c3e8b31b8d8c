import { describe, expect, it } from 'vitest';
import { CLUSTER_NAME_MAX, REDISCLUSTER_CEL, RESERVED_LABELS, specProblems } from './admission.ts';
import { LABEL } from './names.ts';

const rc = (spec: Record<string, unknown> = {}, name = 'cache') => ({ metadata: { name }, spec });

describe('what a RedisCluster may not say', () => {
  it('accepts an ordinary cluster', () => {
    expect(
      specProblems(
        rc({
          replicas: 3,
          config: { 'maxmemory-policy': 'allkeys-lru', 'min-replicas-to-write': '2' },
          failover: { after: '3s' },
          podTemplate: { labels: { team: 'cache' }, annotations: { 'example.com/owner': 'x' } },
        }),
      ),
    ).toEqual([]);
  });

  it('refuses names a Service or the StatefulSet controller cannot carry', () => {
    expect(specProblems(rc({}, 'a.b'))).toEqual([expect.stringMatching(/DNS-1035/)]);
    expect(specProblems(rc({}, '1cache'))).toEqual([expect.stringMatching(/DNS-1035/)]);
    expect(specProblems(rc({}, 'x'.repeat(CLUSTER_NAME_MAX)))).toEqual([]);
    expect(specProblems(rc({}, 'x'.repeat(CLUSTER_NAME_MAX + 1)))).toEqual([
      expect.stringMatching(/at most 52 characters.*controller-revision-hash/),
    ]);
  });

  it("refuses pod labels and annotations that are Tideway's own", () => {
    expect(RESERVED_LABELS).toEqual([LABEL.name, LABEL.instance, LABEL.managedBy, LABEL.component]);
    for (const k of [LABEL.role, 'tideway.dev/anything', ...RESERVED_LABELS])
      expect(specProblems(rc({ podTemplate: { labels: { [k]: 'x' } } }))).toEqual([
        expect.stringMatching(/^podTemplate.labels must not set tideway.dev\/\*/),
      ]);
    expect(specProblems(rc({ podTemplate: { annotations: { 'tideway.dev/config-hash': 'x' } } }))).toEqual([
      expect.stringMatching(/^podTemplate.annotations must not set tideway.dev\/\*/),
    ]);
    // An app.kubernetes.io annotation selects nothing.
    expect(specProblems(rc({ podTemplate: { annotations: { [LABEL.component]: 'x' } } }))).toEqual([]);
  });

  it('refuses a failover.after under 3s, however it is written', () => {
    for (const ok of ['3s', '3000ms', '2s1000ms', '0.05m', '1d', '0d3s'])
      expect(specProblems(rc({ failover: { after: ok } })), ok).toEqual([]);
    for (const bad of ['0s', '2s', '2999ms', '2s999ms', '0d', 'soon'])
      expect(specProblems(rc({ failover: { after: bad } })), bad).toEqual([
        expect.stringMatching(/^failover.after must be at least 3s/),
      ]);
  });

  it('checks spec.config against spec.replicas', () => {
    expect(specProblems(rc({ replicas: 1, config: { 'min-replicas-to-write': '1' } }))).toEqual([
      expect.stringMatching(/min-replicas-to-write .* from 0 to replicas - 1/),
    ]);
  });

  it('names every problem at once', () => {
    expect(specProblems(rc({ failover: { after: '1s' }, config: { loadmodule: 'x' } }, 'a.b'))).toHaveLength(
      3,
    );
    expect(specProblems(rc({ failover: { after: '1s' } }, 'a.b')).join('; ')).toMatch(
      /DNS-1035.*; failover.after/,
    );
  });

  it('generates a CEL rule with a message for every list', () => {
    const text = JSON.stringify(REDISCLUSTER_CEL);
    for (const word of [
      'loadmodule',
      'requirepass',
      'min-slaves-to-write',
      'tideway.dev/',
      LABEL.managedBy,
      '3000.0',
    ])
      expect(text).toContain(word);
    for (const rules of Object.values(REDISCLUSTER_CEL))
      for (const r of rules) expect(r.message.length).toBeGreaterThan(20);
  });
});
