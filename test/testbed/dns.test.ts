import { execFile } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { readlinkSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, createNamespace, until } from '../support/bed.ts';

const STS = 'member';
const PEERS = 'peers';
const labels = { app: 'dns-check' };
const isReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

type Run = { code: number; stdout: string; stderr: string };

/**
 * Kubernetes' DNS contract as etcd peers use it, checked from inside pods with the C library's
 * resolver (getent, through the pod's /etc/resolv.conf and nsswitch) and with c-ares (SRV): a
 * StatefulSet's pods find each other by `<pod>.<headless svc>` before they are Ready, a Service
 * resolves to its ClusterIP, unknown names fail, and a re-created pod's name follows its new IP.
 * Names expected to fail are asked with a trailing dot, so the resolver does not walk the search
 * path to the node's own resolvers; so is SRV, as Node's c-ares asks a name as given.
 */
describe('cluster DNS on the test bed', () => {
  const b = bed();
  let ns = '';

  const pod = (name: string) => b.core.readNamespacedPod({ namespace: ns, name });
  /** A command as a process of the pod runs it: its mount and network namespaces and its root. */
  const inPod = async (name: string, argv: string[]): Promise<Run> => {
    const pid = (await b.faults.containerPids(ns, name)).main;
    if (!pid) throw new Error(`pod ${name} has no running container`);
    return new Promise((resolve) => {
      execFile(
        'nsenter',
        ['-t', String(pid), '-m', '-n', '-r', '--', ...argv],
        { timeout: 30_000 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
          resolve({ code, stdout, stderr });
        },
      );
    });
  };
  /** The addresses getaddrinfo gives for IPv4 (A queries only), and the canonical name. */
  const resolve4 = async (from: string, name: string) => {
    const r = await inPod(from, ['/usr/bin/getent', 'ahostsv4', name]);
    const lines = r.stdout.trim().split('\n').filter(Boolean);
    return {
      code: r.code,
      addresses: [...new Set(lines.map((l) => l.split(/\s+/)[0]))].sort(),
      canonical: lines[0]?.split(/\s+/)[2],
    };
  };
  const ipOf = async (name: string) => (await pod(name)).status?.podIP ?? '';
  /** Waits for the pod's container to run in its own root (the launcher chroots after it started). */
  const running = (name: string, notUid?: string) =>
    until(
      `${name} running in its root`,
      async () => {
        const p = await pod(name);
        if (p.metadata?.uid === notUid || p.status?.phase !== 'Running') return undefined;
        const pid = (await b.faults.containerPids(ns, name)).main;
        return pid && readlinkSync(`/proc/${pid}/root`) !== '/' ? p : undefined;
      },
      120_000,
    );
  const fqdn = (host: string) => `${host}.${PEERS}.${ns}.svc.cluster.local`;
  const hostResolver = () => {
    const r = new Resolver({ timeout: 2000, tries: 1 });
    r.setServers([b.info.network.hostIp]);
    return r;
  };
  /** The addresses the Service's EndpointSlices publish for a pod. */
  const sliceAddresses = async (service: string, podName: string) =>
    (
      await b.discovery.listNamespacedEndpointSlice({
        namespace: ns,
        labelSelector: `kubernetes.io/service-name=${service}`,
      })
    ).items.flatMap((slice) =>
      (slice.endpoints ?? []).filter((e) => e.targetRef?.name === podName).flatMap((e) => e.addresses),
    );

  beforeAll(async () => {
    ns = await createNamespace(b.core, 'dns');
    const headless = (name: string, publishNotReadyAddresses: boolean) =>
      b.core.createNamespacedService({
        namespace: ns,
        body: {
          metadata: { name },
          spec: {
            clusterIP: 'None',
            publishNotReadyAddresses,
            selector: labels,
            ports: [{ name: 'peer', port: 2380 }],
          },
        },
      });
    await headless(PEERS, true);
    await headless('ready-only', false);
    await b.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'front' },
        spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    await b.apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: STS },
        spec: {
          serviceName: PEERS,
          replicas: 2,
          // As etcd's StatefulSets do: all members start at once, none Ready before the others are up.
          podManagementPolicy: 'Parallel',
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              terminationGracePeriodSeconds: 1,
              containers: [
                {
                  name: 'main',
                  image: 'busybox',
                  command: ['sleep', '100000'],
                  // Not Ready until the test says so (a file in the container's own /tmp).
                  readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1 },
                },
              ],
            },
          },
        },
      },
    });
    await running(`${STS}-0`);
    await running(`${STS}-1`);
  });

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it("gives ClusterFirst pods the cluster DNS, kubelet's search path and ndots:5", async () => {
    const r = await inPod(`${STS}-0`, ['cat', '/etc/resolv.conf']);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      new RegExp(`^search ${ns}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local( |$)`),
    );
    expect(lines.slice(1)).toEqual([`nameserver ${b.info.network.hostIp}`, 'options ndots:5']);
  });

  it('resolves a not-ready StatefulSet peer by its FQDN, and as <pod>.<service> through the search path', async () => {
    expect(isReady(await pod(`${STS}-1`))).toBe(false);
    const ip1 = await ipOf(`${STS}-1`);
    const ip0 = await ipOf(`${STS}-0`);
    // The EndpointSlice controller publishes the pods a moment after they got their IPs.
    await until('member-1 in DNS', async () => {
      const r = await resolve4(`${STS}-0`, `${fqdn(`${STS}-1`)}.`);
      return r.addresses.includes(ip1) ? true : undefined;
    });
    expect(await resolve4(`${STS}-0`, fqdn(`${STS}-1`))).toEqual({
      code: 0,
      addresses: [ip1],
      canonical: fqdn(`${STS}-1`),
    });
    expect(await resolve4(`${STS}-0`, `${STS}-1.${PEERS}`)).toEqual({
      code: 0,
      addresses: [ip1],
      canonical: fqdn(`${STS}-1`),
    });
    await until('member-0 in DNS', async () => {
      const r = await resolve4(`${STS}-1`, `${fqdn(`${STS}-0`)}.`);
      return r.addresses.includes(ip0) ? true : undefined;
    });
    expect((await resolve4(`${STS}-1`, `${STS}-0.${PEERS}`)).addresses).toEqual([ip0]);
    // Asked for IPv4 and IPv6 at once (A and AAAA), the name exists with no AAAA: IPv4 only.
    const both = await inPod(`${STS}-0`, ['/usr/bin/getent', 'ahosts', fqdn(`${STS}-1`)]);
    expect(both.code).toBe(0);
    expect(
      new Set(
        both.stdout
          .trim()
          .split('\n')
          .map((l) => l.split(/\s+/)[0]),
      ),
    ).toEqual(new Set([ip1]));
    // The headless Service itself: every pod, Ready or not.
    expect((await resolve4(`${STS}-1`, PEERS)).addresses).toEqual([ip0, ip1].sort());
    expect((await pod(`${STS}-0`)).status?.phase).toBe('Running');
    expect(isReady(await pod(`${STS}-0`))).toBe(false);
  });

  it('answers SRV for the named port with each peer by name (c-ares, which asks the name as given)', async () => {
    const script = `require('node:dns').promises.resolveSrv('_peer._tcp.${PEERS}.${ns}.svc.cluster.local').then(
      (r) => console.log(JSON.stringify(r.map((s) => s.name + ':' + s.port).sort())),
      (e) => { console.error(e.code); process.exit(2); })`;
    const r = await inPod(`${STS}-0`, [process.execPath, '-e', script]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([`${fqdn(`${STS}-0`)}:2380`, `${fqdn(`${STS}-1`)}:2380`]);
  });

  it('leaves not-ready pods out of a headless Service without publishNotReadyAddresses, until Ready', async () => {
    const name = `ready-only.${ns}.svc.cluster.local.`;
    expect(await resolve4(`${STS}-0`, name)).toMatchObject({ code: 2, addresses: [] });
    for (const p of [`${STS}-0`, `${STS}-1`]) expect((await inPod(p, ['touch', '/tmp/ready'])).code).toBe(0);
    const want = [await ipOf(`${STS}-0`), await ipOf(`${STS}-1`)].sort();
    await until('ready-only to list both pods once Ready', async () => {
      const r = await resolve4(`${STS}-0`, name);
      return JSON.stringify(r.addresses) === JSON.stringify(want) ? true : undefined;
    });
  });

  it('resolves a Service to its ClusterIP by its short name, with its namespace, and in another namespace', async () => {
    const front = (await b.core.readNamespacedService({ namespace: ns, name: 'front' })).spec?.clusterIP;
    const api = (await b.core.readNamespacedService({ namespace: 'default', name: 'kubernetes' })).spec
      ?.clusterIP;
    expect(front).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    for (const name of ['front', `front.${ns}`, `front.${ns}.svc`, `front.${ns}.svc.cluster.local`])
      expect(await resolve4(`${STS}-1`, name), name).toMatchObject({ code: 0, addresses: [front] });
    expect(await resolve4(`${STS}-1`, 'kubernetes.default')).toMatchObject({
      code: 0,
      addresses: [api],
      canonical: 'kubernetes.default.svc.cluster.local',
    });
  });

  it('fails for names the cluster does not have', async () => {
    for (const name of [
      `nope.${ns}.svc.cluster.local.`,
      `${STS}-7.${PEERS}.${ns}.svc.cluster.local.`,
      `front.no-such-namespace.svc.cluster.local.`,
      'nope.svc.cluster.local.',
    ])
      expect(await resolve4(`${STS}-0`, name), name).toMatchObject({ code: 2, addresses: [] });
  });

  it('moves a name to the new IP of a pod that was deleted and re-created, as soon as its EndpointSlice does', async () => {
    const before = await pod(`${STS}-1`);
    const oldIp = before.status?.podIP ?? '';
    await b.core.deleteNamespacedPod({ namespace: ns, name: `${STS}-1` });
    const after = await running(`${STS}-1`, before.metadata?.uid);
    const newIp = after.status?.podIP ?? '';
    expect(newIp).not.toBe(oldIp);
    // The EndpointSlice controller publishes the new pod when it gets to it (after a conflict it
    // backs off for seconds); the DNS must then follow the slice at once.
    const started = Date.now();
    await until(
      'the EndpointSlice to list member-1 at its new IP',
      async () => {
        const published = await sliceAddresses(PEERS, `${STS}-1`);
        if (published.join() === newIp) return true;
        throw new Error(`the slice has ${published.join(', ') || 'nothing'} for member-1`);
      },
      120_000,
    );
    const published = Date.now();
    await until(
      'member-1 to resolve to its new IP',
      async () => {
        const at = Date.now();
        const r = await resolve4(`${STS}-0`, `${fqdn(`${STS}-1`)}.`);
        if (r.addresses.join() === newIp) return true;
        // Asked from the machine too, to tell a stale answer from one that does not reach the pod.
        const direct = await hostResolver()
          .resolve4(fqdn(`${STS}-1`))
          .then(
            (a) => a.join(', '),
            (e: { code?: string }) => e.code,
          );
        throw new Error(
          `the pod gets ${r.addresses.join(', ') || `nothing (exit ${r.code})`} after ${Date.now() - at} ms; the machine gets ${direct}`,
        );
      },
      5_000,
    );
    process.stderr.write(
      `[dns] member-1's new IP: in its EndpointSlice after ${published - started} ms, in DNS ${Date.now() - published} ms later\n`,
    );
    expect((await resolve4(`${STS}-0`, `${STS}-1.${PEERS}`)).addresses).toEqual([newIp]);
  });
});
