import { afterAll, describe, expect, it } from 'vitest';
import { bed, until } from '../support/bed.ts';
import { spawnWorker, type Worker } from '../support/functions.ts';

/**
 * TIDEWAY_NATS_REPLICAS: a count the NATS deployment cannot keep (three copies on the test bed's
 * single server) stops the function at start with the reason, instead of running without its
 * stream; a count JetStream never takes is refused as bad environment.
 */
describe('JetStream replicas', () => {
  const b = bed();
  const workers: Worker[] = [];
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
  });

  const exitOf = async (replicas: string) => {
    const w = spawnWorker('recorder', {
      NATS_URL: b.info.natsUrl,
      KUBECONFIG: b.info.kubeconfig,
      TIDEWAY_NATS_REPLICAS: replicas,
      TIDEWAY_WATCH_NAMESPACE: 'replicas-test',
    });
    workers.push(w);
    return until(
      'the worker exited',
      async () => (w.exitCode() === null ? undefined : { code: w.exitCode(), output: w.output() }),
      30_000,
      100,
    );
  };

  it('three copies on one server: exit 78, naming the servers it needs', async () => {
    const { code, output } = await exitOf('3');
    expect(code).toBe(78);
    expect(output).toContain('TIDEWAY_NATS_REPLICAS=3 needs a JetStream cluster of at least 3 servers');
  });

  it('two copies: refused as bad environment', async () => {
    const { code, output } = await exitOf('2');
    expect(code).toBe(78);
    expect(output).toContain('TIDEWAY_NATS_REPLICAS must be 1, 3 or 5');
  });
});
