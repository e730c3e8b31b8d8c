import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { joinOf } from '../../shared/etcdcluster/desired.ts';
import { bed, until } from '../support/bed.ts';
import { etcdFunctionsFor } from './support.ts';

/**
 * A member replaced in the order that once left its replacement crash-looping: its volume is
 * deleted while it serves (a learner is added in its place and the learner's pod made with the
 * member list of then), and it leaves before the learner's etcd first starts. etcd refuses a
 * join whose --initial-cluster is not the member list ("member count is unequal") at every
 * restart; the learner's pod must be made again with the list as it is now.
 */
describe('etcd member replaced before its replacement started', () => {
  const b = bed();
  const { ns, etcd } = etcdFunctionsFor(b, 'etcd-replace');

  it('the learner’s pod is made again without the member that left, joins, and is promoted', async () => {
    await etcd.apply('main', { size: 3 });
    await etcd.ready('main', 3);
    const seed = await etcd.client('main');
    try {
      for (let i = 0; i < 20; i++) await seed.put(`k${i}`, `v${i}`);
    } finally {
      seed.close();
    }
    const c = await etcd.get('main');
    const before = (c.status?.members ?? []).map((m) => m.name);
    const victim = (c.status?.members ?? []).find((m) => m.name !== c.status?.leader);
    const name = victim?.name ?? '';

    // Its volume goes while it serves: a learner is added and its pod made, naming the victim.
    await b.core.deleteNamespacedPersistentVolumeClaim({ namespace: ns(), name: `data-${name}` });
    const first = await until(
      'the learner’s pod',
      async () => (await etcd.pods('main')).find((p) => !before.includes(p.metadata?.name ?? '')),
      60_000,
      20,
    );
    const learner = first.metadata?.name ?? '';
    expect(joinOf(first)?.initialCluster).toContain(name);
    // Its etcd is held before it starts (as on a slow node) ...
    await until(
      `${learner} held down`,
      () =>
        b.faults.holdDownPod(ns(), learner).then(
          () => true,
          () => undefined,
        ),
      10_000,
      10,
    );
    const log = join(b.info.dir, 'node', 'pods', first.metadata?.uid ?? '', 'etcd.log');
    const startedBeforeHold = (await readFile(log, 'utf8').catch(() => '')).length > 0;
    // ... while the victim's pod goes too, and the victim leaves the member list.
    await b.core.deleteNamespacedPod({ namespace: ns(), name });
    const client = await etcd.client('main');
    try {
      await until(
        `${name} removed`,
        async () => ((await client.memberList()).members.some((m) => m.name === name) ? undefined : true),
        60_000,
        200,
      );
    } finally {
      client.close();
    }
    // Released, that pod's etcd would refuse the member list for good; it is replaced instead.
    await b.faults.releasePod(ns(), learner).catch(() => undefined);
    const healed = await until(
      `${learner} promoted`,
      async () => {
        const x = await etcd.ready('main', 3, 5_000).catch(() => undefined);
        return x?.status?.members?.some((m) => m.name === learner && !m.learner) ? x : undefined;
      },
      120_000,
      1000,
    );
    expect((healed.status?.members ?? []).map((m) => m.name)).not.toContain(name);
    const now = (await etcd.pods('main')).find((p) => p.metadata?.name === learner);
    // (Unless its etcd beat the hold and joined: then it has data, and its flags no longer count.)
    if (!startedBeforeHold) {
      expect(now?.metadata?.uid).not.toBe(first.metadata?.uid);
      expect(joinOf(now ?? {})?.initialCluster).not.toContain(name);
    }
    const after = await etcd.client('main');
    try {
      expect((await after.range({ prefix: 'k' })).count).toBe(20);
    } finally {
      after.close();
    }
  });
});
