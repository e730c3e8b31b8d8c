import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { TIDEWAY_KINDS } from '../kube/resources.ts';
import { loadServerless } from '../runtime/config.ts';
import { ENGINES, engineByLabel, ownedKinds } from './index.ts';

const root = join(import.meta.dirname, '..', '..');

type Rule = { apiGroups?: string[]; resources?: string[]; verbs?: string[] };
const roleRules = (fn: string): Rule[] =>
  parseAllDocuments(readFileSync(join(root, 'infra', 'rbac', `${fn}.yaml`), 'utf8'))
    .map((d) => d.toJS() as { kind: string; metadata: { name: string }; rules?: Rule[] })
    .filter((d) => d.kind === 'ClusterRole' && d.metadata.name === `tideway-${fn}`)
    .flatMap((d) => d.rules ?? []);
const watcherRules = () => roleRules('watcher');
const grants = (rules: Rule[], group: string, plural: string, verb: string) =>
  rules.some((r) => r.apiGroups?.includes(group) && r.resources?.includes(plural) && r.verbs?.includes(verb));

/**
 * The engine registry is the one list the watcher, its role and the installer follow: each entry
 * must agree with the CRDs, serverless.yml and infra/rbac, or an engine's events go nowhere.
 */
describe('engines', () => {
  it('have distinct labels and cluster kinds, each found by its label', () => {
    expect(new Set(ENGINES.map((e) => e.label)).size).toBe(ENGINES.length);
    expect(new Set(ENGINES.map((e) => e.cluster.kind)).size).toBe(ENGINES.length);
    for (const e of ENGINES) {
      expect(engineByLabel(e.label)).toBe(e);
    }
    expect(engineByLabel('postgres')).toBeUndefined();
  });

  it('name a cluster kind that crds/ defines, at the coordinates the runtime writes to', () => {
    const crds = readdirSync(join(root, 'crds')).map(
      (f) =>
        parse(readFileSync(join(root, 'crds', f), 'utf8')) as {
          spec: { group: string; names: { kind: string; plural: string }; versions: { name: string }[] };
        },
    );
    for (const e of ENGINES) {
      const crd = crds.find((c) => c.spec.names.kind === e.cluster.kind);
      expect(crd, e.cluster.kind).toBeDefined();
      expect(crd?.spec.group).toBe(e.cluster.group);
      expect(crd?.spec.names.plural).toBe(e.cluster.plural);
      expect(crd?.spec.versions.map((v) => v.name)).toContain(e.cluster.version);
      expect(Object.values(TIDEWAY_KINDS)).toContainEqual(e.cluster);
    }
  });

  it('have their functions in serverless.yml, each with its role file', async () => {
    const sls = await loadServerless(join(root, 'serverless.yml'));
    for (const e of ENGINES)
      for (const fn of e.functions) {
        expect(sls.functions[fn], `${e.label}: ${fn} in serverless.yml`).toBeDefined();
        expect(existsSync(join(root, 'infra', 'rbac', `${fn}.yaml`)), `infra/rbac/${fn}.yaml`).toBe(true);
      }
  });

  it("are what the watcher's role lets it list and watch: every Tideway kind and all they make", () => {
    const rules = watcherRules();
    for (const k of Object.values(TIDEWAY_KINDS))
      for (const verb of ['list', 'watch'])
        expect(grants(rules, k.group, k.plural, verb), `${verb} ${k.plural}`).toBe(true);
    for (const k of ownedKinds())
      for (const verb of ['list', 'watch'])
        expect(grants(rules, k.group, k.plural, verb), `${verb} ${k.plural}`).toBe(true);
  });

  it('are clusters a Backup or a schedule may name: backup and schedule may get every engine’s cluster kind', () => {
    for (const fn of ['backup', 'schedule'])
      for (const e of ENGINES)
        expect(
          grants(roleRules(fn), e.cluster.group, e.cluster.plural, 'get'),
          `${fn}: get ${e.cluster.plural}`,
        ).toBe(true);
  });
});
