import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { run } from '../exec/run.ts';
import type { KubeProxy } from '../network/types.ts';
import { bin } from '../paths.ts';
import { startProcess, waitReady } from '../process/managed-process.ts';
import { freePort } from '../process/ports.ts';
import { ipt, iptQuiet } from './commands.ts';

/**
 * The real kube-proxy in iptables mode. Its stop runs `kube-proxy --cleanup` and then removes
 * what that leaves (KUBE-* chains in every table, both families), so the machine ends as it began.
 */
export const startKubeProxy = async (o: {
  kubeconfig: string;
  nodeName: string;
  hostIp: string;
  podCidr: string;
  logFile: string;
  testbedId: string;
}): Promise<KubeProxy> => {
  const [healthPort, metricsPort] = [await freePort(), await freePort()];
  const config = join(dirname(o.logFile), 'kube-proxy.yaml');
  await writeFile(
    config,
    [
      'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
      'kind: KubeProxyConfiguration',
      'mode: iptables',
      `clusterCIDR: ${o.podCidr}`,
      `hostnameOverride: ${o.nodeName}`,
      `healthzBindAddress: 127.0.0.1:${healthPort}`,
      `metricsBindAddress: 127.0.0.1:${metricsPort}`,
      'clientConnection:',
      `  kubeconfig: ${o.kubeconfig}`,
      // Conntrack sysctls are not ours to change on this machine; 0 means "leave them alone".
      'conntrack:',
      '  maxPerCore: 0',
      '  min: 0',
      '  tcpEstablishedTimeout: 0s',
      '  tcpCloseWaitTimeout: 0s',
      'iptables:',
      '  localhostNodePorts: false',
      '  syncPeriod: 5s',
      '  minSyncPeriod: 0s',
      'nodePortAddresses: ["primary"]',
      '',
    ].join('\n'),
  );
  const proc = startProcess({
    name: 'kube-proxy',
    command: bin('kube-proxy'),
    args: [`--config=${config}`, '--v=1'],
    logFile: o.logFile,
    testbedId: o.testbedId,
  });
  await waitReady(proc, async () => (await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status < 500, {
    timeoutMs: 30_000,
  });
  return {
    process: proc,
    stop: async () => {
      await proc.stop(5000);
      await run(bin('kube-proxy'), ['--cleanup']).catch(() => undefined);
      await removeKubeChains();
    },
  };
};

/** Every KUBE-* chain and every rule jumping to one, in all tables of both families. */
export const removeKubeChains = async (): Promise<void> => {
  for (const family of [4, 6] as const) {
    for (const table of ['filter', 'nat', 'mangle', 'raw']) {
      const rules = (await iptQuiet(family, '-t', table, '-S')).split('\n');
      for (const rule of rules) {
        if (!rule.startsWith('-A ') || !rule.includes('KUBE-')) continue;
        const [, chain] = rule.split(' ');
        if (chain?.startsWith('KUBE-')) continue; // flushed with its chain below
        await ipt(family, '-t', table, ...splitRule(rule.replace(/^-A /, '-D '))).catch(() => undefined);
      }
      const chains = rules.filter((r) => r.startsWith('-N KUBE-')).map((r) => r.slice(3));
      for (const c of chains) await iptQuiet(family, '-t', table, '-F', c);
      for (const c of chains) await iptQuiet(family, '-t', table, '-X', c);
    }
  }
};

/** Splits an iptables -S line into arguments, keeping quoted comments whole. */
const splitRule = (rule: string): string[] =>
  [...rule.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');
