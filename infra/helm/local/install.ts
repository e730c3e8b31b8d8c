import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureImage } from '../../../scripts/image/build.ts';
import { ensureGoBinaries } from '../../testbed/build/ensure.ts';
import type { Log } from '../../testbed/build/index.ts';
import type { TestbedInfo } from '../../testbed/types.ts';
import { CHART_DIR } from '../generate.ts';
import { helmOrThrow, sets } from './helm.ts';
import { installKedaCrds, type KedaOperator, startKedaOperator } from './keda.ts';

/** KEDA's timings for the release (values keda.*), in seconds. */
export type KedaTimings = { pollingInterval: number; cooldownPeriod: number; initialCooldownPeriod: number };

export type ChartOnTestbed = {
  release: string;
  namespace: string;
  /** Tideway's image as the pods name it: `localhost/tideway:<tag>`. */
  image: string;
  /** The values the release was installed with (`--set` pairs). */
  values: Readonly<Record<string, string>>;
  keda?: KedaOperator;
  /** Stops the KEDA operator (the release stays; the test bed's stop removes it). */
  stop(): Promise<void>;
};

/**
 * Installs Tideway on the test bed with its Helm chart, as a user would into any cluster: the
 * functions run as pods from Tideway's image (built by `npm run image`'s code, cached), NATS is
 * the test bed's (one server: one copy of each stream), and with `keda` the real KEDA operator
 * scales the event functions from zero. Waits until every Deployment is available.
 */
export const installChartOnTestbed = async (o: {
  info: TestbedInfo;
  root: string;
  release: string;
  namespace: string;
  watchNamespaces?: readonly string[];
  keda?: KedaTimings;
  /** More `--set` pairs (they win). */
  values?: Readonly<Record<string, string>>;
  /** helm's --take-ownership: adopt objects of the same names made without helm (tests only). */
  takeOwnership?: boolean;
  log: Log;
}): Promise<ChartOnTestbed> => {
  const built = await ensureImage({ root: o.root, log: o.log });
  const [repository, tag] = splitImage(built.image);
  const values: Record<string, string> = {
    'image.repository': repository,
    'image.tag': tag,
    'nats.url': o.info.natsUrl,
    'nats.replicas': '1',
    'keda.enabled': String(Boolean(o.keda)),
    ...(o.keda
      ? {
          'keda.pollingInterval': String(o.keda.pollingInterval),
          'keda.cooldownPeriod': String(o.keda.cooldownPeriod),
          'keda.initialCooldownPeriod': String(o.keda.initialCooldownPeriod),
        }
      : {}),
    ...Object.fromEntries((o.watchNamespaces ?? []).map((ns, i) => [`watchNamespaces[${i}]`, ns])),
    ...o.values,
  };

  let keda: KedaOperator | undefined;
  let kedaDir: string | undefined;
  if (o.keda) {
    await ensureGoBinaries(o.log, { keda: true });
    await installKedaCrds(o.info, o.log);
    kedaDir = await mkdtemp(join(tmpdir(), 'tideway-keda-'));
    // KEDA keeps what it makes for itself in its own namespace; Tideway's ScaledObjects are in
    // the release namespace, the only one this operator watches.
    keda = startKedaOperator({
      info: o.info,
      watchNamespace: o.namespace,
      objectNamespace: o.namespace,
      dir: kedaDir,
    });
  }
  const stop = async () => {
    await keda?.stop();
    if (kedaDir) await rm(kedaDir, { recursive: true, force: true });
  };
  try {
    o.log(`[chart] helm install ${o.release} in ${o.namespace} (${built.image})`);
    await helmOrThrow(
      [
        ...['upgrade', '--install', o.release, CHART_DIR, '-n', o.namespace, '--create-namespace'],
        ...sets(values),
        ...(o.takeOwnership ? ['--take-ownership'] : []),
        ...['--wait', '--timeout', '10m'],
      ],
      o.info.kubeconfig,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { release: o.release, namespace: o.namespace, image: built.image, values, keda, stop };
};

/** `repo[:port]/name:tag` → [repository, tag]. */
export const splitImage = (image: string): [string, string] => {
  const at = image.lastIndexOf(':');
  if (at <= image.lastIndexOf('/')) throw new Error(`image ${image} has no tag`);
  return [image.slice(0, at), image.slice(at + 1)];
};
