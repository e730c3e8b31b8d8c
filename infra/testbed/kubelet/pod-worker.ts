import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  CoreV1Api,
  V1Container,
  V1ContainerStatus,
  V1Pod,
  V1PodCondition,
  V1PodStatus,
} from '@kubernetes/client-node';
import { ImageArchiveError } from '../image-table/image-config.ts';
import { lookupImage } from '../image-table/index.ts';
import type { ImageStore } from '../image-table/store.ts';
import type { PodNetwork } from '../network/types.ts';
import type { ImageTable } from '../node-agent/types.ts';
import { TESTBED_ENV_MARKER } from '../paths.ts';
import { type ManagedProcess, startProcess } from '../process/managed-process.ts';
import { ContainerConfigError, resolveEnv } from './env.ts';
import { ImagePullError } from './errors.ts';
import { type ClusterDnsConfig, hostsFile, podHostname, resolvConf } from './etc-files.ts';
import { volumeMounts } from './mounts.ts';
import { type ExecIdentity, type PodFiles, prepareOciContainer } from './oci-container.ts';
import { type ProbeLoop, probeLoop, runProbe } from './probes.ts';
import type { TokenCache } from './projected.ts';
import { prepareTableContainer } from './table-container.ts';
import { terminationMessage } from './termination.ts';
import { type PodVolumes, prepareVolumes, refreshVolumes } from './volumes.ts';

type Terminated = {
  exitCode: number;
  reason: string;
  startedAt?: Date;
  finishedAt: Date;
  signal?: number;
  message?: string;
};

type ContainerRun = {
  spec: V1Container;
  init: boolean;
  proc?: ManagedProcess;
  restartCount: number;
  startedAt?: Date;
  waiting?: { reason: string; message: string };
  terminated?: Terminated;
  lastTerminated?: Terminated;
  ready: boolean;
  started: boolean;
  nextStartAt: number;
  backoffMs: number;
  probes: ProbeLoop[];
  /** The container finished for good (restartPolicy says so). */
  done: boolean;
  /** Where this run's output starts in the container's log (for FallbackToLogsOnError). */
  logStart?: number;
  /** The host file the container writes its termination message to (held images only). */
  terminationLog?: string | undefined;
  imageId?: string;
};

export type WorkerContext = {
  core: CoreV1Api;
  network: PodNetwork;
  images: ImageTable;
  imageStore: ImageStore | undefined;
  workDir: string;
  testbedId: string;
  hostIp: string;
  restartBackoffMs: number;
  maxBackoffMs: number;
  /** How often configMap, secret and downwardAPI volumes are refreshed while the pod runs. */
  volumeRefreshMs: number;
  /** kubelet's --cluster-dns and --cluster-domain; without, ClusterFirst pods get the node's resolver. */
  clusterDns?: ClusterDnsConfig | undefined;
};

export type PodWorker = {
  update(pod: V1Pod): void;
  hold(down: boolean): Promise<void>;
  pids(): Map<string, number>;
  /** Stops the containers (grace in ms) and frees the network; `finalize` also deletes the pod. */
  terminate(graceMs: number, finalize: boolean): Promise<void>;
};

const SIGNALS: Record<string, number> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2, SIGABRT: 6, SIGSEGV: 11 };
const statusJson = (s: V1PodStatus) =>
  JSON.stringify(s, (k, v) =>
    k.endsWith('Time') || k === 'startedAt' || k === 'finishedAt' ? undefined : v,
  );

/**
 * Runs one pod as kubelet would: network namespace, volumes, init containers in order, then the
 * containers with restarts and back-off, probes, and the pod status written on every change.
 */
export const startPodWorker = (ctx: WorkerContext, initial: V1Pod): PodWorker => {
  let pod = initial;
  const uid = pod.metadata?.uid ?? '';
  const ns = pod.metadata?.namespace ?? 'default';
  const name = pod.metadata?.name ?? '';
  const podDir = join(ctx.workDir, 'pods', uid);
  const startTime = new Date();
  let podIp: string | undefined;
  let netnsName: string | undefined;
  let volumes: PodVolumes | undefined;
  const tokens: TokenCache = new Map();
  let nextRefreshAt = 0;
  let setupError: { reason: string; message: string } | undefined;
  let held = false;
  let stopping = false;
  let lastWritten = '';
  let busy: Promise<void> = Promise.resolve();

  const runs: ContainerRun[] = [
    ...(pod.spec?.initContainers ?? []).map((spec) => ({ spec, init: true })),
    ...(pod.spec?.containers ?? []).map((spec) => ({ spec, init: false })),
  ].map(({ spec, init }) => ({
    spec,
    init,
    restartCount: 0,
    ready: false,
    started: false,
    nextStartAt: 0,
    backoffMs: 0,
    probes: [],
    done: false,
  }));

  const policy = () => pod.spec?.restartPolicy ?? 'Always';
  const initsDone = () => runs.filter((r) => r.init).every((r) => r.done && r.terminated?.exitCode === 0);
  const finished = () => runs.filter((r) => !r.init).every((r) => r.done);

  const stopProbes = (r: ContainerRun) => {
    for (const p of r.probes) p.stop();
    r.probes = [];
  };

  const onExit = (
    r: ContainerRun,
    proc: ManagedProcess,
    code: number | null,
    signal: NodeJS.Signals | null,
  ) => {
    if (r.proc !== proc) return;
    stopProbes(r);
    r.proc = undefined;
    r.ready = false;
    const exitCode = code ?? 128 + (SIGNALS[signal ?? ''] ?? 9);
    const message = terminationMessage({
      file: r.terminationLog,
      log: proc.logFile,
      logStart: r.logStart ?? 0,
      policy: r.spec.terminationMessagePolicy,
      exitCode,
    });
    const t: Terminated = {
      exitCode,
      reason: exitCode === 0 ? 'Completed' : 'Error',
      finishedAt: new Date(),
      ...(r.startedAt ? { startedAt: r.startedAt } : {}),
      ...(message ? { message } : {}),
    };
    const restart =
      !stopping &&
      !held &&
      (r.init
        ? exitCode !== 0 && policy() !== 'Never'
        : policy() === 'Always' || (policy() === 'OnFailure' && exitCode !== 0));
    if (restart) {
      r.lastTerminated = t;
      r.terminated = undefined;
      // kubelet's CrashLoopBackOff: doubling delay, reset after a long healthy run.
      const ranMs = Date.now() - (r.startedAt?.getTime() ?? 0);
      r.backoffMs =
        ranMs > 10 * 60_000 || r.backoffMs === 0
          ? ctx.restartBackoffMs
          : Math.min(r.backoffMs * 2, ctx.maxBackoffMs);
      r.nextStartAt = Date.now() + r.backoffMs;
      r.waiting = {
        reason: 'CrashLoopBackOff',
        message: `back-off ${Math.round(r.backoffMs / 1000)}s restarting failed container ${r.spec.name}`,
      };
      r.restartCount++;
    } else {
      r.terminated = t;
      r.done = !held && !stopping;
    }
    kick();
  };

  /** The pod's /etc/hosts, /etc/hostname and /etc/resolv.conf, written once it has its IP. */
  const podFiles = async (): Promise<PodFiles> => {
    const files = {
      hosts: join(podDir, 'etc', 'hosts'),
      hostname: join(podDir, 'etc', 'hostname'),
      resolvConf: join(podDir, 'etc', 'resolv.conf'),
    };
    if (!existsSync(files.hosts)) {
      await mkdir(join(podDir, 'etc'), { recursive: true });
      const host = await readFile('/etc/resolv.conf', 'utf8').catch(() => '');
      await writeFile(files.resolvConf, resolvConf(pod, host, ctx.clusterDns), { mode: 0o644 });
      await writeFile(files.hostname, `${podHostname(pod)}\n`, { mode: 0o644 });
      await writeFile(files.hosts, hostsFile(pod, podIp ?? ''), { mode: 0o644 });
    }
    return files;
  };

  /** Where the image comes from: an archive the node holds first, else the image table. */
  const findImage = async (image: string) => {
    const held = await ctx.imageStore?.find(image);
    if (held) return { kind: 'held' as const, held };
    const entry = lookupImage(ctx.images, image);
    if (entry) return { kind: 'table' as const, entry };
    const refs = (await ctx.imageStore?.refs()) ?? [];
    throw new ImagePullError(
      `image "${image}" is neither held as an archive (${refs.join(', ') || 'none'}) nor in the test bed's image table (${Object.keys(ctx.images).join(', ')})`,
    );
  };

  const startContainer = async (r: ContainerRun) => {
    const cdir = join(podDir, 'containers', r.spec.name);
    const image = r.spec.image ?? '';
    const logFile = join(podDir, `${r.spec.name}.log`);
    let prepared: {
      script: string;
      exec: ExecIdentity;
      terminationLog?: string;
      imageId: string;
      oci: boolean;
    };
    try {
      const found = await findImage(image);
      const lower = found.kind === 'held' ? await ctx.imageStore?.rootfs(found.held) : undefined;
      const podEnv = await resolveEnv(ctx.core, pod, r.spec, podIp ?? '', ctx.hostIp);
      const mounts = await volumeMounts(r.spec, volumes ?? new Map(), podEnv);
      await rm(cdir, { recursive: true, force: true });
      await mkdir(cdir, { recursive: true });
      if (found.kind === 'held' && lower) {
        const oci = await prepareOciContainer({
          image: found.held,
          lower,
          pod,
          spec: r.spec,
          podEnv,
          volumes: mounts,
          podFiles: await podFiles(),
          dir: cdir,
          log: logFile,
          marker: { [TESTBED_ENV_MARKER]: ctx.testbedId },
        });
        prepared = {
          ...oci,
          imageId: `${repositoryOf(found.held.ref)}@${found.held.manifestDigest}`,
          oci: true,
        };
      } else if (found.kind === 'table') {
        const table = await prepareTableContainer({
          image,
          entry: found.entry,
          pod,
          spec: r.spec,
          podEnv,
          volumes: mounts,
          podFiles: await podFiles(),
          dir: cdir,
          log: logFile,
        });
        prepared = { ...table, imageId: `tideway-testbed://${image}`, oci: false };
      } else throw new ImagePullError(`image "${image}" has no unpacked root`);
    } catch (error) {
      if (error instanceof ImagePullError || error instanceof ImageArchiveError) {
        r.waiting = { reason: 'ErrImagePull', message: error.message };
        r.nextStartAt = Date.now() + 5000;
        return;
      }
      if (!(error instanceof ContainerConfigError)) throw error;
      r.waiting = { reason: 'CreateContainerConfigError', message: error.message };
      r.nextStartAt = Date.now() + 2000;
      return;
    }
    const script = join(cdir, 'launch.sh');
    await writeFile(script, prepared.script, { mode: 0o700 });
    r.logStart = await stat(logFile).then(
      (st) => st.size,
      () => 0,
    );
    r.terminationLog = prepared.terminationLog;
    r.imageId = prepared.imageId;
    const proc = startProcess({
      name: `${ns}/${name}/${r.spec.name}`,
      command: 'ip',
      // An image's container also gets the pod's host name, in a UTS namespace of its own.
      args: [
        'netns',
        'exec',
        netnsName ?? '',
        ...(prepared.oci ? ['unshare', '--uts', '--'] : []),
        'sh',
        script,
      ],
      logFile,
      testbedId: ctx.testbedId,
      // Stopped, killed or ended, a container takes everything it forked with it, as on a node.
      group: true,
    });
    r.proc = proc;
    r.startedAt = new Date();
    r.waiting = undefined;
    r.terminated = undefined;
    r.started = true;
    void proc.exited.then(({ code, signal }) => onExit(r, proc, code, signal));
    const attempt = (probe: NonNullable<V1Container['readinessProbe']>) => () =>
      runProbe(probe, r.spec, podIp ?? '', proc.pid, prepared.exec);
    if (r.spec.readinessProbe) {
      r.probes.push(
        probeLoop(
          r.spec.readinessProbe,
          attempt(r.spec.readinessProbe),
          (ok) => {
            r.ready = ok;
            kick();
          },
          false,
        ),
      );
    } else {
      r.ready = true;
    }
    if (r.spec.livenessProbe) {
      r.probes.push(
        probeLoop(
          r.spec.livenessProbe,
          attempt(r.spec.livenessProbe),
          (ok) => {
            if (!ok && r.proc === proc) proc.kill('SIGKILL'); // restart through the normal exit path
          },
          true,
        ),
      );
    }
  };

  const containerStatus = (r: ContainerRun): V1ContainerStatus => {
    const state = r.proc
      ? { running: { startedAt: r.startedAt } }
      : r.terminated && !r.waiting
        ? { terminated: { ...r.terminated } }
        : {
            waiting: r.waiting ?? {
              reason: setupError?.reason ?? 'ContainerCreating',
              message: setupError?.message ?? '',
            },
          };
    return {
      name: r.spec.name,
      image: r.spec.image ?? '',
      imageID: r.imageId ?? '',
      ready: r.proc !== undefined && r.ready,
      started: r.proc !== undefined,
      restartCount: r.restartCount,
      state,
      ...(r.lastTerminated ? { lastState: { terminated: { ...r.lastTerminated } } } : {}),
      ...(r.proc ? { containerID: `tideway://${r.proc.pid}` } : {}),
    } as V1ContainerStatus;
  };

  const buildStatus = (): V1PodStatus => {
    const main = runs.filter((r) => !r.init);
    const cond = (type: string, ok: boolean, reason?: string): V1PodCondition => ({
      type,
      status: ok ? 'True' : 'False',
      ...(reason && !ok ? { reason } : {}),
    });
    const containersReady = main.every((r) => r.proc && r.ready);
    let phase = 'Pending';
    if (main.every((r) => r.done))
      phase = main.every((r) => r.terminated?.exitCode === 0) ? 'Succeeded' : 'Failed';
    else if (initsDone() && main.some((r) => r.started)) phase = 'Running';
    const previous = new Map((pod.status?.conditions ?? []).map((c) => [c.type, c]));
    const withTimes = (c: V1PodCondition) => ({
      ...c,
      lastTransitionTime:
        previous.get(c.type)?.status === c.status ? previous.get(c.type)?.lastTransitionTime : new Date(),
    });
    return {
      phase,
      hostIP: ctx.hostIp,
      hostIPs: [{ ip: ctx.hostIp }],
      ...(podIp ? { podIP: podIp, podIPs: [{ ip: podIp }] } : {}),
      startTime,
      conditions: [
        cond('PodScheduled', true),
        cond('Initialized', initsDone(), 'ContainersNotInitialized'),
        cond('ContainersReady', containersReady, 'ContainersNotReady'),
        cond('Ready', containersReady && phase === 'Running', 'ContainersNotReady'),
      ].map(withTimes),
      initContainerStatuses: runs.filter((r) => r.init).map(containerStatus),
      containerStatuses: main.map(containerStatus),
      // The API server set it at creation and refuses a change: every status write would fail.
      qosClass: pod.status?.qosClass ?? 'BestEffort',
    } as V1PodStatus;
  };

  const writeStatus = async () => {
    const status = buildStatus();
    const json = statusJson(status);
    if (json === lastWritten) return;
    try {
      const fresh = await ctx.core.readNamespacedPod({ namespace: ns, name });
      if (fresh.metadata?.uid !== uid) return;
      const written = await ctx.core.replaceNamespacedPodStatus({
        namespace: ns,
        name,
        body: { ...fresh, status },
      });
      pod = written;
      lastWritten = json;
    } catch {
      // Conflict or a passing API error: the next sync writes it again.
    }
  };

  const sync = async () => {
    if (stopping) return;
    if (!netnsName) {
      const net = await ctx.network.attachPod(uid.slice(0, 8));
      netnsName = net.name;
      podIp = net.ip;
    }
    if (!volumes) {
      try {
        volumes = await prepareVolumes(ctx.core, pod, podDir, tokens);
        setupError = undefined;
        nextRefreshAt = Date.now() + ctx.volumeRefreshMs;
      } catch (error) {
        if (!(error instanceof ContainerConfigError)) throw error;
        setupError = { reason: 'CreateContainerConfigError', message: error.message };
      }
    } else if (Date.now() >= nextRefreshAt && !finished()) {
      // Here, in the serialized sync, so no refresh runs after terminate() removed the pod dir.
      nextRefreshAt = Date.now() + ctx.volumeRefreshMs;
      await refreshVolumes(ctx.core, pod, volumes, tokens).catch(() => undefined); // the next round retries
    }
    if (volumes && !held) {
      const now = Date.now();
      for (const r of runs) {
        if (r.init && r.done) continue;
        if (!r.init && !initsDone()) break;
        if (!r.proc && !r.done && r.nextStartAt <= now) await startContainer(r);
        if (r.init && !r.done) break; // init containers run one at a time, in order
      }
    }
    await writeStatus();
  };

  let pending = false;
  function kick() {
    if (pending) return;
    pending = true;
    busy = busy.then(async () => {
      pending = false;
      await sync().catch(() => undefined);
    });
  }
  const timer = setInterval(kick, 500);
  kick();

  const stopContainers = async (graceMs: number) => {
    await Promise.all(
      runs.map(async (r) => {
        stopProbes(r);
        await r.proc?.stop(graceMs);
      }),
    );
  };

  return {
    update: (p) => {
      pod = { ...p, status: p.status ?? pod.status };
      kick();
    },
    hold: async (down) => {
      if (!down && !held) return; // released without a hold: nothing came back
      held = down;
      if (down) {
        // A lost node: no grace.
        await busy;
        await stopContainers(0);
        for (const r of runs.filter((x) => !x.init)) {
          r.waiting = { reason: 'HeldDown', message: 'held down by the test bed fault API' };
          r.terminated = undefined;
        }
      } else {
        // As a node that comes back: kubelet makes the pod's sandbox again, so its volumes are
        // set up again (a Secret deleted meanwhile shows) and its init containers run again, in
        // order, before the others.
        volumes = undefined;
        for (const r of runs) {
          // Counted as a restart only where a container ran (an init container may never have).
          const ran = !r.init || r.terminated !== undefined || r.lastTerminated !== undefined;
          if (r.init && r.terminated) r.lastTerminated = r.terminated;
          if (r.init) r.terminated = undefined;
          r.waiting = undefined;
          r.done = false;
          r.nextStartAt = 0;
          if (ran) r.restartCount++;
        }
      }
      kick();
      await busy;
    },
    pids: () => new Map(runs.flatMap((r) => (r.proc ? [[r.spec.name, r.proc.pid] as const] : []))),
    terminate: async (graceMs, finalize) => {
      stopping = true;
      clearInterval(timer);
      await busy;
      await stopContainers(graceMs);
      await ctx.network.detachPod(uid.slice(0, 8));
      await rm(podDir, { recursive: true, force: true });
      if (finalize) {
        await ctx.core
          .deleteNamespacedPod({
            namespace: ns,
            name,
            gracePeriodSeconds: 0,
            body: { gracePeriodSeconds: 0, preconditions: { uid } },
          })
          .catch(() => undefined);
      }
    },
  };
};

/** `name:tag` → `name`: containerd reports a held image as repository@digest, without its tag. */
const repositoryOf = (ref: string) => ref.replace(/:[^/:]*$/, '');
