import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { GRACE_MARGIN_SECONDS } from '../../infra/helm/functions.ts';
import { CHART_DIR } from '../../infra/helm/generate.ts';
import { installKedaCrds } from '../../infra/helm/local/keda.ts';
import { loadServerless, nodeArgsFor } from '../../shared/runtime/config.ts';
import { consumerName } from '../../shared/runtime/durables.ts';
import { zWorkerEnv } from '../../shared/runtime/worker.ts';
import { bed, createNamespace } from '../support/bed.ts';
import { helm, type Manifest, named, ofKind, render, sets } from './helm.ts';

const ROOT = join(CHART_DIR, '..', '..', '..');
const config = await loadServerless(join(ROOT, 'serverless.yml'));
const functions = Object.entries(config.functions);
const eventFunctions = functions.filter(([, fn]) => !fn.tideway.service).map(([name]) => name);
const KEDA_ON = { 'keda.enabled': 'true' };

const containerOf = (d: Manifest) => d.spec.template.spec.containers[0];
const envOf = (d: Manifest): Record<string, unknown> =>
  Object.fromEntries(
    (containerOf(d).env as { name: string; value?: string; valueFrom?: unknown }[]).map((e) => [
      e.name,
      e.value ?? e.valueFrom,
    ]),
  );

/** Issue 14 item 3: the chart lints clean, says what serverless.yml says, and the API server takes it. */
describe("Tideway's Helm chart", () => {
  const b = bed();
  let ns = '';
  let served: string[] = [];
  /** `kubectl apply --dry-run=server`: the API server validates and admits, and stores nothing. */
  const dryRun = async (yaml: string) => {
    try {
      return { ok: true, out: await b.kubectlIn(yaml, 'apply', '--dry-run=server', '-f', '-') };
    } catch (error) {
      return { ok: false, out: (error as { stderr?: string }).stderr ?? String(error) };
    }
  };

  beforeAll(async () => {
    ns = await createNamespace(b.core, 'helm');
    served = [await createNamespace(b.core, 'helm-a'), await createNamespace(b.core, 'helm-b')];
    // KEDA's CRDs at its pin, for the ScaledObjects (from its module; KEDA itself is not needed).
    await installKedaCrds(b.info, (m) => process.stderr.write(`${m}\n`));
  });

  describe('helm lint', () => {
    it.each([
      ['the default values', {}],
      [
        'KEDA on, serving two namespaces',
        { ...KEDA_ON, 'watchNamespaces[0]': 'a', 'watchNamespaces[1]': 'b' },
      ],
      ['NATS_URL from a Secret', { 'nats.url': '', 'nats.existingSecret.name': 'nats-url' }],
    ])('is clean with %s', async (_, values) => {
      const r = await helm('lint', '--strict', CHART_DIR, ...sets(values));
      expect(r.stderr + r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
      expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(r.code).toBe(0);
    });

    it.each([
      ['a function serverless.yml does not have', { 'functions.nope.replicas': '1' }, "'nope' not allowed"],
      ['a misspelt key', { 'functions.reconcile.replica': '1' }, "'replica' not allowed"],
      ['KEDA on as a string', { 'keda.enabled': 'yes' }, '/keda/enabled'],
      ['no NATS', { 'nats.url': '' }, "at '/nats/url': minLength"],
      [
        'a lag endpoint that is no base URL',
        { ...KEDA_ON, 'keda.lagEndpoint': 'lag:9090/x' },
        "at '/keda/lagEndpoint': 'lag:9090/x' does not match pattern",
      ],
      [
        'a served namespace too long for its Services’ names (tideway-webhook-ns-<namespace>: 63 at most)',
        { 'watchNamespaces[0]': 'n'.repeat(45) },
        "at '/watchNamespaces/0': maxLength: got 45, want 44",
      ],
      [
        'KEDA with the watcher off and no lag endpoint',
        { ...KEDA_ON, 'functions.watcher.enabled': 'false' },
        "at '/keda/lagEndpoint': minLength",
      ],
    ])('refuses %s, saying why', async (_, values, why) => {
      const r = await helm('lint', '--strict', CHART_DIR, ...sets(values));
      expect(r.code).not.toBe(0);
      expect(r.stderr + r.stdout).toContain(why);
      // And so does an install.
      const t = await helm('template', 'tideway', CHART_DIR, ...sets(values));
      expect(t.code).not.toBe(0);
      expect(t.stderr).toContain(why);
    });
  });

  it('refuses to install KEDA scaling a function from more replicas than to, saying why (lint only notes it)', async () => {
    const values = {
      ...KEDA_ON,
      'functions.backup.keda.minReplicaCount': '5',
      'functions.backup.keda.maxReplicaCount': '1',
    };
    const t = await helm('template', 'tideway', CHART_DIR, ...sets(values));
    expect(t.code).not.toBe(0);
    expect(t.stderr).toContain('functions.backup.keda: minReplicaCount (5) is above maxReplicaCount (1)');
  });

  describe('says what serverless.yml says', () => {
    it('a Deployment per function, as its own ServiceAccount, with its memory, replicas and grace', async () => {
      const { objects } = await render(ns);
      expect(
        ofKind(objects, 'Deployment')
          .map((d) => d.metadata.name)
          .sort(),
      ).toEqual(functions.map(([name]) => `tideway-${name}`).sort());
      for (const [name, fn] of functions) {
        const d = named(objects, 'Deployment', `tideway-${name}`);
        const memory = `${fn.memorySize ?? 256}Mi`;
        expect(d.spec.replicas, name).toBe(fn.tideway.replicas);
        expect(d.spec.template.spec.serviceAccountName, name).toBe(`tideway-${name}`);
        expect(d.spec.template.spec.terminationGracePeriodSeconds, name).toBe(
          fn.timeout + GRACE_MARGIN_SECONDS,
        );
        expect(containerOf(d).resources, name).toEqual({
          requests: { cpu: '50m', memory },
          limits: { memory },
        });
        expect(envOf(d), name).toMatchObject({
          TIDEWAY_FUNCTION: name,
          TIDEWAY_NAMESPACE: ns,
          // A three-server JetStream cluster keeps three copies of the stream, locks and cursor.
          TIDEWAY_NATS_REPLICAS: '3',
          // The worker's stop fits in the pod's grace period only if it knows it.
          TIDEWAY_TERMINATION_GRACE_PERIOD_SECONDS: String(
            d.spec.template.spec.terminationGracePeriodSeconds,
          ),
        });
        expect(containerOf(d).args).toEqual(['$(TIDEWAY_FUNCTION)']);
        // The heap for memorySize, as the supervisor sets it locally.
        expect(envOf(d).NODE_OPTIONS, name).toBe(
          nodeArgsFor(fn).length > 0 ? nodeArgsFor(fn).join(' ') : undefined,
        );
        named(objects, 'ServiceAccount', `tideway-${name}`);
        expect(named(objects, 'PodDisruptionBudget', `tideway-${name}`).spec.selector).toEqual(
          d.spec.selector,
        );
      }
      // The restore feed listens on the pod's own address.
      expect(envOf(named(objects, 'Deployment', 'tideway-restore')).TIDEWAY_RESTORE_FEED_HOST).toEqual({
        fieldRef: { fieldPath: 'status.podIP' },
      });
    });

    it("gives every function an environment its worker accepts (found by running the image: backup's grace)", async () => {
      const { objects } = await render(ns, { 'nats.replicas': '1' });
      for (const d of ofKind(objects, 'Deployment')) {
        // Values from the downward API or a Secret are what the pod would hold.
        const env = Object.fromEntries(
          Object.entries(envOf(d)).map(([k, v]) => [k, typeof v === 'string' ? v : 'from-the-pod']),
        );
        const parsed = zWorkerEnv.safeParse(env);
        expect(parsed.error?.issues ?? [], d.metadata.name).toEqual([]);
      }
    });

    it("takes a function's own NODE_OPTIONS in place of the chart's, once", async () => {
      const { objects } = await render(ns, {
        'functions.backup.env[0].name': 'NODE_OPTIONS',
        'functions.backup.env[0].value': '--max-old-space-size=900',
      });
      const env = containerOf(named(objects, 'Deployment', 'tideway-backup')).env as { name: string }[];
      expect(env.filter((e) => e.name === 'NODE_OPTIONS')).toEqual([
        { name: 'NODE_OPTIONS', value: '--max-old-space-size=900' },
      ]);
      expect(envOf(named(objects, 'Deployment', 'tideway-restore')).NODE_OPTIONS).toBe(
        nodeArgsFor(config.functions.restore!).join(' '),
      );
    });

    it("adds podLabels to every pod's own, never in place of one its selector and Services match", async () => {
      const { objects } = await render(ns, {
        'podLabels.app\\.kubernetes\\.io/component': 'mine',
        'podLabels.team': 'data',
      });
      for (const d of ofKind(objects, 'Deployment')) {
        const labels = d.spec.template.metadata.labels;
        expect(labels.team).toBe('data');
        expect(labels['app.kubernetes.io/component']).toBe(
          d.spec.selector.matchLabels['app.kubernetes.io/component'],
        );
        expect(labels['app.kubernetes.io/component']).not.toBe('mine');
      }
    });

    it('runs every pod as non-root, read-only, without capabilities', async () => {
      const { objects } = await render(ns);
      for (const d of ofKind(objects, 'Deployment')) {
        // The image's own user (docs/image.md).
        expect(d.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 });
        expect(containerOf(d).securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
      }
    });

    it('puts a Service in front of the webhook, on the port serverless.yml gives it', async () => {
      const { objects } = await render(ns);
      expect(ofKind(objects, 'Service').map((s) => s.metadata.name)).toEqual(['tideway-webhook']);
      const svc = named(objects, 'Service', 'tideway-webhook');
      const webhook = named(objects, 'Deployment', 'tideway-webhook');
      expect(svc.spec.selector).toEqual(webhook.spec.selector.matchLabels);
      expect(containerOf(webhook).ports).toEqual([
        { name: 'ops', containerPort: 9090, protocol: 'TCP' },
        {
          name: 'http',
          containerPort: Number(config.functions.webhook?.environment.TIDEWAY_WEBHOOK_PORT),
          protocol: 'TCP',
        },
      ]);
      expect(svc.spec.ports[0].targetPort).toBe('http');
    });

    it("serves every function's /metrics, /healthz and /readyz on the pod, and probes them", async () => {
      const { objects } = await render(ns);
      for (const d of ofKind(objects, 'Deployment')) {
        const c = containerOf(d);
        const name = d.metadata.name;
        expect(envOf(d), name).toMatchObject({ TIDEWAY_OPS_HOST: '0.0.0.0', TIDEWAY_OPS_PORT: '9090' });
        expect(
          (c.ports as { name: string }[]).map((p) => p.name),
          name,
        ).toContain('ops');
        const probePort = name === 'tideway-webhook' ? 'http' : 'ops';
        expect(c.readinessProbe, name).toMatchObject({ httpGet: { path: '/readyz', port: probePort } });
        expect(c.livenessProbe, name).toMatchObject({ httpGet: { path: '/healthz', port: probePort } });
      }
    });

    it('binds each function only to its own roles, in the release namespace, never as admin', async () => {
      const { objects } = await render(ns);
      for (const binding of [...ofKind(objects, 'ClusterRoleBinding'), ...ofKind(objects, 'RoleBinding')]) {
        const roleRef = binding.roleRef as { name: string };
        const subjects = binding.subjects as { name: string; namespace: string }[];
        expect(['cluster-admin', 'admin', 'edit']).not.toContain(roleRef.name);
        for (const s of subjects) {
          expect(s.namespace).toBe(ns);
          expect(roleRef.name.startsWith(s.name), `${s.name} bound to ${roleRef.name}`).toBe(true);
        }
      }
      expect(ofKind(objects, 'ServiceAccount').every((s) => s.metadata.namespace === ns)).toBe(true);
    });

    it('with KEDA: a ScaledObject per event function on its consumer, from zero; services keep theirs', async () => {
      const { objects } = await render(ns, KEDA_ON);
      const scaled = ofKind(objects, 'ScaledObject');
      expect(scaled.map((s) => s.metadata.name).sort()).toEqual(
        eventFunctions.map((f) => `tideway-${f}`).sort(),
      );
      for (const name of eventFunctions) {
        const fn = config.functions[name];
        const s = named(objects, 'ScaledObject', `tideway-${name}`);
        expect(s.spec).toMatchObject({
          scaleTargetRef: { name: `tideway-${name}` },
          minReplicaCount: 0,
          maxReplicaCount: fn?.tideway.replicas,
        });
        // One trigger: the lag of the function's consumers (as the runtime names them), which the
        // watcher's ops Service serves for all functions from one listing (functions/watcher/lag.ts).
        expect(s.spec.triggers).toEqual([
          {
            type: 'metrics-api',
            name: 'lag',
            metadata: {
              url: `http://tideway-watcher.${ns}.svc.cluster.local:9090/lag/${consumerName(name)}`,
              format: 'json',
              valueLocation: 'lag',
              targetValue: String(fn?.reservedConcurrency),
              activationTargetValue: '0',
            },
          },
        ]);
        expect(s.spec).not.toHaveProperty('advanced');
        // KEDA owns the count: a replicas field would put it back at every upgrade.
        expect(named(objects, 'Deployment', `tideway-${name}`).spec).not.toHaveProperty('replicas');
      }
      for (const name of ['watcher', 'webhook'])
        expect(named(objects, 'Deployment', `tideway-${name}`).spec.replicas).toBe(2);
      // Where that URL leads: the watcher's ops port.
      expect(named(objects, 'Service', 'tideway-watcher').spec).toMatchObject({
        selector: named(objects, 'Deployment', 'tideway-watcher').spec.selector.matchLabels,
        ports: [{ name: 'ops', port: 9090, targetPort: 'ops', protocol: 'TCP' }],
      });
      // Without KEDA nobody reads it; with an endpoint given, KEDA reads that instead.
      expect(ofKind((await render(ns, {})).objects, 'Service').map((o) => o.metadata.name)).toEqual([
        'tideway-webhook',
      ]);
      const elsewhere = await render(ns, { ...KEDA_ON, 'keda.lagEndpoint': 'https://lag.example:8443' });
      expect(ofKind(elsewhere.objects, 'Service').map((o) => o.metadata.name)).toEqual(['tideway-webhook']);
      expect(named(elsewhere.objects, 'ScaledObject', 'tideway-health').spec.triggers[0].metadata.url).toBe(
        `https://lag.example:8443/lag/${consumerName('health')}`,
      );
    });

    it('serving namespaces: a set of functions per namespace, on its own consumer and account', async () => {
      const [a = '', c = ''] = served;
      const { objects } = await render(ns, { ...KEDA_ON, 'watchNamespaces[0]': a, 'watchNamespaces[1]': c });
      expect(ofKind(objects, 'Deployment')).toHaveLength(functions.length * 2);
      const reconcile = named(objects, 'Deployment', `tideway-reconcile-ns-${a}`);
      expect(envOf(reconcile).TIDEWAY_WATCH_NAMESPACE).toBe(a);
      expect(reconcile.spec.template.spec.serviceAccountName).toBe(`tideway-reconcile-ns-${a}`);
      // Each namespace's functions scale on their own consumers, read by their own watcher.
      expect(named(objects, 'ScaledObject', `tideway-reconcile-ns-${a}`).spec.triggers[0].metadata.url).toBe(
        `http://tideway-watcher-ns-${a}.${ns}.svc.cluster.local:9090/lag/${consumerName('reconcile', a)}`,
      );
      // Its rights are bound in its namespace only.
      const bindings = ofKind(objects, 'RoleBinding').filter((r) =>
        (r.subjects as { name: string }[]).some((s) => s.name === `tideway-reconcile-ns-${a}`),
      );
      expect(bindings.map((r) => r.metadata.namespace)).toEqual([a]);
      expect(
        ofKind(objects, 'ClusterRoleBinding').every((r) =>
          r.metadata.name.startsWith('tideway-watcher-cluster-id'),
        ),
      ).toBe(true);
    });

    it('leaves out a disabled function, with its account and roles', async () => {
      const { objects } = await render(ns, { 'functions.webhook.enabled': 'false' });
      expect(objects.filter((o) => o.metadata.name.startsWith('tideway-webhook'))).toEqual([]);
      named(objects, 'Deployment', 'tideway-watcher');
    });
  });

  describe('the API server accepts the rendered chart (kubectl apply --dry-run=server)', () => {
    it.each([
      ['the default values', {}],
      ['KEDA on', KEDA_ON],
    ])('with %s, CRDs included', async (_, values) => {
      const { yaml, objects } = await render(ns, values, ['--include-crds']);
      const r = await dryRun(yaml);
      expect(r.out).toContain('(server dry run)');
      expect(r.ok, r.out).toBe(true);
      expect(r.out.trim().split('\n')).toHaveLength(objects.length);
    });

    it('serving two namespaces, with KEDA', async () => {
      const [a = '', c = ''] = served;
      const { yaml, objects } = await render(ns, {
        ...KEDA_ON,
        'watchNamespaces[0]': a,
        'watchNamespaces[1]': c,
      });
      const r = await dryRun(yaml);
      expect(r.ok, r.out).toBe(true);
      expect(r.out.trim().split('\n')).toHaveLength(objects.length);
    });

    it('and refuses what it should: the dry run checks, against the CRDs too', async () => {
      const bad = await render(ns, { 'functions.reconcile.resources.limits.memory': 'lots' });
      expect((await dryRun(bad.yaml)).out).toContain('quantities must match');
      // A ScaledObject KEDA's CRD does not accept.
      const { objects } = await render(ns, KEDA_ON);
      const broken = objects.map((o) =>
        o.kind === 'ScaledObject' ? { ...o, spec: { ...o.spec, minReplicaCount: 'none' } } : o,
      );
      const r = await dryRun(broken.map((o) => stringify(o)).join('---\n'));
      expect(r.ok).toBe(false);
      expect(r.out).toContain('spec.minReplicaCount');
    });
  });
});
