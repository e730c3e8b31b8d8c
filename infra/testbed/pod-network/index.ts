import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { PodNetns, PodNetwork } from '../network/types.ts';
import { chooseRanges, ipToInt, nthAddress, parseCidr } from './cidr.ts';
import { ip, ipQuiet, writeSysctl } from './commands.ts';
import { installGuard, removeGuard } from './guard.ts';
import { removeKubeChains } from './kube-proxy.ts';
import { restoreSysctls, saveSysctls } from './sysctl-state.ts';

const IP_FORWARD = '/proc/sys/net/ipv4/ip_forward';
const BRIDGE_NF = '/proc/sys/net/bridge/bridge-nf-call-iptables';

/**
 * The pod network: bridge `${prefix}0` holding the first pod address (the node's InternalIP),
 * one network namespace per pod joined by a veth, the service range routed to the bridge, and
 * the forwarding guard. close() restores the machine as it was.
 */
export const setupPodNetwork = async (o: { prefix: string }): Promise<PodNetwork> => {
  const routes = JSON.parse(await ip('-j', 'route', 'show')) as { dst: string }[];
  const { podCidr, serviceCidr } = chooseRanges(
    routes
      .map((r) => (r.dst === 'default' ? '' : r.dst.includes('/') ? r.dst : `${r.dst}/32`))
      .filter(Boolean),
  );
  const bridge = `${o.prefix}0`;
  const hostIp = nthAddress(podCidr, 1);
  const bits = parseCidr(podCidr).bits;
  const size = parseCidr(podCidr).size;

  await saveSysctls(o.prefix);
  const pods = new Map<string, PodNetns & { veth: string }>();
  const used = new Set<number>();
  let vethSeq = 0;
  let nextHost = 2;
  let queue: Promise<unknown> = Promise.resolve();
  /** Serializes attach/detach: IP and veth name allocation must not race. */
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => undefined);
    return next;
  };

  // Given an address, a bridge keeps it; otherwise it takes the lowest of its ports', and a pod's
  // veth coming or going changes it: the other pods' ARP entries for the host (API server, NATS,
  // cluster DNS) then point nowhere until they expire, for up to half a minute.
  const mac = ['02', ...[...randomBytes(5)].map((b) => b.toString(16).padStart(2, '0'))].join(':');
  await ip('link', 'add', bridge, 'address', mac, 'type', 'bridge');
  await ip('addr', 'add', `${hostIp}/${bits}`, 'dev', bridge);
  await ip('link', 'set', bridge, 'up');
  await ip('route', 'add', serviceCidr, 'dev', bridge);
  await installGuard(o.prefix, bridge);
  await writeSysctl(IP_FORWARD, '1');
  if (existsSync(BRIDGE_NF)) await writeSysctl(BRIDGE_NF, '1');

  const detach = async (id: string) => {
    const pod = pods.get(id);
    const name = pod?.name ?? `${o.prefix}-${id}`;
    await ipQuiet('netns', 'delete', name);
    if (pod) await ipQuiet('link', 'delete', pod.veth);
    if (pod) used.delete(ipToInt(pod.ip) - parseCidr(podCidr).base);
    pods.delete(id);
  };

  let closed = false;
  return {
    bridge,
    hostIp,
    podCidr,
    serviceCidr,
    attachPod: (id) =>
      serial(async () => {
        const existing = pods.get(id);
        if (existing) return existing;
        // Round-robin, not lowest-free: a re-created pod must not get the address its
        // predecessor just released while neighbour caches still point at the old veth.
        let n = 0;
        for (let i = 0; i < size - 3; i++) {
          const candidate = 2 + ((nextHost - 2 + i) % (size - 3));
          if (!used.has(candidate)) {
            n = candidate;
            break;
          }
        }
        if (n === 0) throw new Error(`pod CIDR ${podCidr} is full`);
        nextHost = n + 1;
        used.add(n);
        const podIp = nthAddress(podCidr, n);
        const name = `${o.prefix}-${id}`;
        const veth = `${o.prefix}v${vethSeq++}`;
        const peer = `${veth}p`;
        try {
          await ip('netns', 'add', name);
          await ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', peer);
          await ip('link', 'set', peer, 'netns', name);
          await ip('-n', name, 'link', 'set', peer, 'name', 'eth0');
          await ip('-n', name, 'addr', 'add', `${podIp}/${bits}`, 'dev', 'eth0');
          await ip('-n', name, 'link', 'set', 'lo', 'up');
          await ip('-n', name, 'link', 'set', 'eth0', 'up');
          await ip('-n', name, 'route', 'add', 'default', 'via', hostIp);
          await ip('link', 'set', veth, 'master', bridge);
          await ip('link', 'set', veth, 'up');
          // Hairpin: a pod reaching itself through a Service comes back out of the same port.
          await ip('link', 'set', veth, 'type', 'bridge_slave', 'hairpin', 'on');
          await ipQuiet('neigh', 'flush', 'to', podIp, 'dev', bridge);
        } catch (error) {
          used.delete(n);
          await ipQuiet('netns', 'delete', name);
          await ipQuiet('link', 'delete', veth);
          throw error;
        }
        const pod = { name, path: `/var/run/netns/${name}`, ip: podIp, veth };
        pods.set(id, pod);
        return pod;
      }),
    detachPod: (id) => serial(() => detach(id)),
    close: () =>
      serial(async () => {
        if (closed) return;
        closed = true;
        for (const id of [...pods.keys()]) await detach(id);
        await removeGuard(o.prefix);
        await ipQuiet('route', 'del', serviceCidr, 'dev', bridge);
        await ipQuiet('link', 'delete', bridge);
        await restoreSysctls(o.prefix);
      }),
  };
};

/**
 * Removes what a killed run left: namespaces, links with the prefix, the guard, sysctls; with
 * `kubeProxy`, also every KUBE-* iptables chain (only the test bed runs a kube-proxy here).
 */
export const cleanupNetworkLeftovers = async (
  prefix: string,
  o: { kubeProxy?: boolean } = {},
): Promise<void> => {
  for (const line of (await ipQuiet('netns', 'list')).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    if (name.startsWith(`${prefix}-`)) await ipQuiet('netns', 'delete', name);
  }
  for (const line of (await ipQuiet('-o', 'link', 'show')).split('\n')) {
    const name = line.split(': ')[1]?.split('@')[0] ?? '';
    if (name.startsWith(prefix)) await ipQuiet('link', 'delete', name);
  }
  await removeGuard(prefix);
  if (o.kubeProxy) await removeKubeChains();
  await restoreSysctls(prefix);
};
