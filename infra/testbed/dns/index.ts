import { readFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { watchCluster } from './cluster-watch.ts';
import { ClusterDnsStartError } from './errors.ts';
import { localUpstreams, type Upstream, upstreamForwarder } from './forward.ts';
import { clusterDnsHandler } from './handler.ts';
import { parseResolvConf } from './resolv-conf.ts';
import { serveDns } from './server.ts';

export type ClusterDns = {
  /** The address pods use as their nameserver. */
  readonly host: string;
  readonly port: number;
  /** The cluster domain, `cluster.local`. */
  readonly zone: string;
  /** The resolvers names outside the cluster domain go to (the node's loopback ones, from its resolv.conf). */
  readonly upstreams: readonly Upstream[];
  stop(): Promise<void>;
};

export const CLUSTER_DOMAIN = 'cluster.local';

/**
 * The test bed's cluster DNS, standing in for CoreDNS: the cluster domain from the API server
 * (Services, EndpointSlices, Namespaces), PTR for cluster addresses, everything else forwarded
 * to the node's own resolvers on loopback (`localUpstreams`), each bounded by `forwardTimeoutMs`. Listens on `host`:`port` (UDP and TCP) and nowhere else.
 */
export const startClusterDns = async (o: {
  kubeconfig: string;
  host: string;
  port?: number;
  zone?: string;
  /** The node's resolv.conf, whose nameservers get the names outside the cluster. */
  resolvConf?: string;
  ttl?: number;
  forwardTimeoutMs?: number;
  log?: (m: string) => void;
}): Promise<ClusterDns> => {
  const log = o.log ?? (() => undefined);
  const zone = o.zone ?? CLUSTER_DOMAIN;
  const port = o.port ?? 53;
  const host = parseResolvConf(await readFile(o.resolvConf ?? '/etc/resolv.conf', 'utf8').catch(() => ''));
  const upstreams = localUpstreams(host.nameservers, o.host);

  const kc = new KubeConfig();
  kc.loadFromFile(o.kubeconfig);
  const cluster = await watchCluster(kc, { syncTimeoutMs: 30_000, log });
  try {
    const server = await serveDns({
      host: o.host,
      port,
      log,
      handler: clusterDnsHandler({
        view: cluster.view,
        forwarder: upstreamForwarder({ upstreams, timeoutMs: o.forwardTimeoutMs ?? 2000 }),
        lookup: { zone, ttl: o.ttl ?? 5, serial: Math.floor(Date.now() / 1000) },
      }),
    });
    return {
      host: server.host,
      port: server.port,
      zone,
      upstreams,
      stop: async () => {
        await server.close();
        await cluster.stop();
      },
    };
  } catch (error) {
    await cluster.stop();
    throw new ClusterDnsStartError(
      `cluster DNS: cannot listen on ${o.host}:${port}: ${String(error)}`,
      false,
      { cause: error },
    );
  }
};
