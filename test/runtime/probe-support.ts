import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CloudEvent } from 'cloudevents';
import type { EventPublisher } from '../../shared/bus/types.ts';
import { eventId } from '../../shared/events/event-id.ts';
import { loadServerless } from '../../shared/runtime/config.ts';
import { createLogger } from '../../shared/runtime/logger.ts';
import { startFunctions } from '../../shared/runtime/supervisor.ts';
import type { ProbeRun } from '../fixtures/functions/probe.ts';
import { TEST_SERVERLESS } from '../support/functions.ts';

/** The probe function's runs so far (test/fixtures/functions/probe.ts). */
export const readRuns = (dir: string): ProbeRun[] => {
  const file = join(dir, 'runs.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ProbeRun);
};

/**
 * The probe function as `tideway run` runs it (supervised processes, restarted when they exit),
 * consuming only `namespace`'s events on a durable consumer of its own.
 */
export const startProbe = async (o: {
  natsUrl: string;
  kubeconfig: string;
  namespace: string;
  dir: string;
}) => {
  const restarts: unknown[] = [];
  const sup = startFunctions({
    serverlessFile: TEST_SERVERLESS,
    config: await loadServerless(TEST_SERVERLESS),
    only: ['probe'],
    env: {
      NATS_URL: o.natsUrl,
      KUBECONFIG: o.kubeconfig,
      PROBE_DIR: o.dir,
      TIDEWAY_WATCH_NAMESPACE: o.namespace,
      // What goes wrong shows in the test's output; the rest does not.
      TIDEWAY_LOG_LEVEL: 'error',
    },
    log: createLogger({}, { write: (line) => restarts.push(JSON.parse(line)) }),
  });
  return { sup, restarts };
};

/** A resource event about RedisCluster `name`, with the probe's instructions as extensions. */
export const probeEvent = (
  publisher: EventPublisher,
  namespace: string,
  name: string,
  ext: { behaviour?: string; cluster?: string; sleep?: string; generation?: string } = {},
) =>
  publisher.publish(
    new CloudEvent({
      id: eventId(namespace, name, ext.generation ?? '', ext.behaviour ?? ''),
      source: '/test',
      type: 'dev.tideway.resource.updated',
      kind: 'RedisCluster',
      namespace,
      name,
      ...ext,
      data: {},
    }),
  );
