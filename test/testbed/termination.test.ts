import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alive } from '../../infra/testbed/process/alive.ts';
import { bed, createNamespace, until } from '../support/bed.ts';

/** Whether SIGTERM (15) is in the process's ignored-signal mask (/proc/<pid>/status SigIgn). */
const ignoresTerm = (pid: number) => {
  try {
    const mask = /^SigIgn:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return mask !== undefined && (BigInt(`0x${mask}`) & (1n << 14n)) !== 0n;
  } catch {
    return false;
  }
};

/**
 * kubelet never stops a container with less than 2 s between SIGTERM and SIGKILL
 * (minimumGracePeriodInSeconds), not even for a force delete: Redis uses that time to save and to
 * let its replicas catch up. The container here ignores SIGTERM, so it lives until the SIGKILL.
 */
describe('stopping a pod, as kubelet does', () => {
  const b = bed();
  let ns = '';
  beforeAll(async () => {
    ns = await createNamespace(b.core, 'stop');
  });
  afterAll(async () => {
    if (ns) await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  const start = async (name: string) => {
    await b.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name },
        spec: {
          terminationGracePeriodSeconds: 30,
          containers: [
            {
              name: 'main',
              image: 'busybox',
              // An ignored signal stays ignored across exec: sleep ignores it too.
              command: ['sh', '-c', "trap '' TERM; while :; do sleep 1; done"],
            },
          ],
        },
      },
    });
    // Running is not enough: the container's process sets itself up before it execs the shell,
    // and a SIGTERM before the trap would end it at once (a CI run saw 160 ms). Wait for TERM in
    // the process's ignored signals.
    return until(
      `${name} ignoring SIGTERM`,
      async () => {
        const pid = (await b.faults.containerPids(ns, name)).main;
        return pid && ignoresTerm(pid) ? pid : undefined;
      },
      120_000,
      100,
    );
  };
  const gone = (pid: number) =>
    until('the container gone', async () => (alive(pid) ? undefined : true), 30_000, 50);

  it.each([
    ['a force delete (grace 0)', 0],
    ['a delete with 1 s of grace', 1],
  ])('gives the container 2 s after SIGTERM on %s', async (_, grace) => {
    const name = `ignores-term-${grace}`;
    const pid = await start(name);
    const deleted = performance.now();
    await b.core.deleteNamespacedPod({ namespace: ns, name, gracePeriodSeconds: grace });
    await gone(pid);
    // The node agent notices within its 300-ms sync, then waits 2 s: never less after the delete.
    expect(performance.now() - deleted).toBeGreaterThanOrEqual(2000);
  });
});
