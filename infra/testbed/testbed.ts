import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { imageCache } from '../../scripts/image/build.ts';
import { ensurePrerequisites, type Log } from './build/index.ts';
import { startControlApi } from './control-api.ts';
import { startControlPlane } from './control-plane/index.ts';
import { startClusterDns } from './dns/index.ts';
import { run } from './exec/run.ts';
import { defaultImageTable, loadedImagesDir, unpackedImagesDir } from './image-table/index.ts';
import { openImageStore } from './image-table/store.ts';
import { startNodeAgent } from './kubelet/index.ts';
import { cleanupLeftovers } from './leftovers.ts';
import { acquireLock } from './lock.ts';
import type { ImageTable } from './node-agent/types.ts';
import { bin, cacheDir, TESTBED_PREFIX } from './paths.ts';
import { setupPodNetwork } from './pod-network/index.ts';
import { removeKubeChains, startKubeProxy } from './pod-network/kube-proxy.ts';
import { type Component, component } from './process/component.ts';
import { startVolumeProvisioner } from './provisioner/index.ts';
import { startNats } from './servers/nats.ts';
import { startHostRedis } from './servers/redis.ts';
import { startS3 } from './servers/s3.ts';
import type { ComponentName, Faults, Testbed } from './types.ts';
import { waitForNodeReady } from './wait.ts';

export type TestbedOptions = {
  /** Progress lines (builds, start-up). Default: silent. */
  log?: Log;
  /** Bucket created in the S3 server. */
  bucket?: string;
  /** Extra image table entries. */
  images?: ImageTable;
  /**
   * More directories of OCI archives (`*.oci.tar`) the node holds, besides `testbed load-image`'s
   * and `npm run image`'s (Tideway's own image).
   */
  imageArchiveDirs?: readonly string[];
};

const NODE_NAME = 'tideway-node-0';

/**
 * Starts the whole local stack: pod network, control plane, cluster DNS, kube-proxy, node agent
 * and volume provisioner, NATS JetStream, an S3 server and a redis-server. Stop (or `await
 * using`) removes every process, directory, namespace and rule it made. Builds whatever is
 * missing first.
 */
export const startTestbed = async (opts: TestbedOptions = {}): Promise<Testbed> => {
  const log = opts.log ?? (() => undefined);
  const startedAt = Date.now();
  const step = (msg: string) => log(`[testbed +${((Date.now() - startedAt) / 1000).toFixed(1)}s] ${msg}`);

  await ensurePrerequisites(log);
  const releaseLock = await acquireLock();
  await cleanupLeftovers(step);

  const id = randomBytes(4).toString('hex');
  const dir = await mkdtemp(join(tmpdir(), `${TESTBED_PREFIX}-`));
  // Undo stack: whatever started is stopped in reverse order, also when start-up fails half-way.
  const undo: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    while (undo.length > 0) {
      const fn = undo.pop();
      const at = Date.now();
      await fn?.().catch((error: unknown) => step(`stop: ${String(error)}`));
      if (Date.now() - at > 1000)
        step(`stop: step ${undo.length} took ${((Date.now() - at) / 1000).toFixed(1)} s`);
    }
  };
  undo.push(releaseLock, () => rm(dir, { recursive: true, force: true }));

  try {
    step('pod network');
    const network = await setupPodNetwork({ prefix: TESTBED_PREFIX });
    undo.push(() => network.close());

    step('control plane, NATS, S3 and redis');
    const base = { dir, testbedId: id };
    /** Registers how to stop what just started, and passes it on. */
    const stoppable =
      <T>(stopOf: (r: T) => Promise<unknown>) =>
      (r: T) => {
        undo.push(() => stopOf(r));
        return r;
      };
    const [cp, nats, s3, redis] = await Promise.all([
      startControlPlane({
        ...base,
        address: network.hostIp,
        serviceCidr: network.serviceCidr,
        clusterCidr: network.podCidr,
      }).then(stoppable((r) => r.stop())),
      startNats({ ...base, host: network.hostIp }).then(stoppable((r) => r.server.stop())),
      startS3({ ...base, host: network.hostIp }).then(stoppable((r) => r.server.stop())),
      startHostRedis(base).then(stoppable((r) => r.server.stop())),
    ]);

    const bucket = opts.bucket ?? 'tideway';
    const s3Client = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    await s3Client.send(new CreateBucketCommand({ Bucket: bucket }));
    s3Client.destroy();

    step('cluster DNS, node agent, volume provisioner, kube-proxy');
    // Before the node agent: its pods get this nameserver. Stopped after it (the undo stack).
    const dns = await startClusterDns({ kubeconfig: cp.kubeconfig, host: network.hostIp, log: step });
    undo.push(() => dns.stop());

    const provisioner = await startVolumeProvisioner({
      kubeconfig: cp.kubeconfig,
      dir: join(dir, 'volumes'),
    });
    undo.push(() => provisioner.stop());

    const nodeAgent = await startNodeAgent({
      kubeconfig: cp.kubeconfig,
      nodeName: NODE_NAME,
      network,
      workDir: join(dir, 'node'),
      testbedId: id,
      images: { ...defaultImageTable(cacheDir()), ...opts.images },
      imageStore: openImageStore({
        dirs: [loadedImagesDir(cacheDir()), imageCache(), ...(opts.imageArchiveDirs ?? [])],
        cache: unpackedImagesDir(cacheDir()),
        log: step,
      }),
      // Faster than kubelet's 10 s: tests wait on restarts.
      restartBackoffMs: 1000,
      clusterDns: { nameservers: [dns.host], domain: dns.zone },
    });
    undo.push(() => nodeAgent.stop());
    await waitForNodeReady(cp.kubeconfig, NODE_NAME);

    // kube-proxy waits for its Node's InternalIP, so it starts after the node agent registered it.
    const kubeProxy: Component = component('kube-proxy', async () => {
      const kp = await startKubeProxy({
        kubeconfig: cp.kubeconfig,
        nodeName: NODE_NAME,
        hostIp: network.hostIp,
        podCidr: network.podCidr,
        logFile: join(dir, 'kube-proxy.log'),
        testbedId: id,
      });
      return kp.process;
    });
    // Whatever happened to the process, its iptables chains go (--cleanup leaves some behind).
    undo.push(async () => {
      await kubeProxy.stop();
      await run(bin('kube-proxy'), ['--cleanup']).catch(() => undefined);
      await removeKubeChains();
    });
    await kubeProxy.start();

    const components: Record<ComponentName, Component> = {
      etcd: cp.etcd,
      'kube-apiserver': cp.apiServer,
      'kube-controller-manager': cp.controllerManager,
      'kube-scheduler': cp.scheduler,
      'kube-proxy': kubeProxy,
      nats: nats.server,
      s3: s3.server,
      redis: redis.server,
    };
    const faults: Faults = {
      holdDownPod: (ns, name) => nodeAgent.holdDown(ns, name),
      releasePod: (ns, name) => nodeAgent.release(ns, name),
      killContainer: async (ns, name, container) => {
        const pids = nodeAgent.containerPids(ns, name);
        const pid = container ? pids.get(container) : pids.values().next().value;
        if (pid === undefined)
          throw new Error(`pod ${ns}/${name} has no running container ${container ?? ''}`);
        process.kill(pid, 'SIGKILL');
      },
      containerPids: (ns, name) => Object.fromEntries(nodeAgent.containerPids(ns, name)),
      component: (name) => components[name],
    };
    const control = await startControlApi(faults);
    undo.push(() => control.close());

    step('ready');
    const testbed: Testbed = {
      id,
      dir,
      kubeconfig: cp.kubeconfig,
      apiServerUrl: cp.url,
      kubectl: bin('kubectl'),
      natsUrl: nats.url,
      s3: {
        endpoint: s3.endpoint,
        region: s3.region,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
        bucket,
      },
      redisUrl: redis.url,
      network: { hostIp: network.hostIp, podCidr: network.podCidr, serviceCidr: network.serviceCidr },
      nodeName: NODE_NAME,
      controlUrl: control.url,
      controlToken: control.token,
      faults,
      stop,
      [Symbol.asyncDispose]: stop,
    };
    return testbed;
  } catch (error) {
    await stop();
    throw error;
  }
};
