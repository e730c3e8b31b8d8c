import { describe, expect, it } from 'vitest';
import { createEtcdClient } from '../../shared/etcd/gateway-client.ts';
import { ETCD_IMAGES } from '../../shared/etcdcluster/names.ts';
import { bed, sleep, until } from '../support/bed.ts';
import { etcdFunctionsFor } from './support.ts';

/**
 * Issue 15: a rolling upgrade across real versions, 3.5 → 3.6, one member at a time with the
 * leader last, while a writer runs: no write fails beyond one retry, and every write is there.
 */
describe('etcd upgrade 3.5 → 3.6', () => {
  const b = bed();
  const { etcd } = etcdFunctionsFor(b, 'etcd-upgrade');

  it('upgrades every member, the leader last, with a writer that loses nothing', async () => {
    await etcd.apply('up', { size: 3, version: '3.5' });
    const before = await etcd.ready('up', 3);
    expect(before.status?.version).toMatch(/^3\.5\./);
    const uids = Object.fromEntries((await etcd.pods('up')).map((p) => [p.metadata?.name, p.metadata?.uid]));

    // The writer: one key at a time, each retried once (pods come back with new addresses: the
    // endpoints are read again before the retry), until told to stop.
    let stop = false;
    let written = 0;
    const failedTwice: string[] = [];
    const writer = (async () => {
      const endpoints = async () =>
        (await etcd.pods('up')).flatMap((p) =>
          p.status?.podIP && !p.metadata?.deletionTimestamp ? [`http://${p.status.podIP}:2379`] : [],
        );
      for (let i = 0; !stop; i++) {
        let ok = false;
        for (let attempt = 0; attempt < 2 && !ok; attempt++) {
          const client = createEtcdClient({ endpoints: await endpoints(), timeoutMs: 5000 });
          try {
            await client.put(`w${String(i).padStart(6, '0')}`, String(i));
            ok = true;
          } catch (error) {
            if (attempt === 1) failedTwice.push(`w${i}: ${(error as Error).message}`);
            await sleep(500);
          } finally {
            client.close();
          }
        }
        if (ok) written = i + 1;
        else break;
        await sleep(50);
      }
    })();

    await etcd.apply('up', { size: 3, version: '3.6' });
    const after = await until(
      'every member on 3.6',
      async () => {
        const c = await etcd.ready('up', 3, 5000).catch(() => undefined);
        return c && (c.status?.members ?? []).every((m) => m.version?.startsWith('3.6.')) ? c : undefined;
      },
      300_000,
      1000,
    );
    stop = true;
    await writer;
    expect(failedTwice).toEqual([]);
    expect(written).toBeGreaterThan(0);
    expect(after.status?.version).toMatch(/^3\.6\./);
    // Each member restarted (new pod) on the new image; none was replaced (same names).
    const pods = await etcd.pods('up');
    expect(pods.map((p) => p.spec?.containers[0]?.image)).toEqual(Array(3).fill(ETCD_IMAGES['3.6']));
    for (const p of pods) expect(p.metadata?.uid).not.toBe(uids[p.metadata?.name ?? '']);
    expect(Object.keys(uids).sort()).toEqual(pods.map((p) => p.metadata?.name).sort());
    const client = await etcd.client('up');
    try {
      expect((await client.range({ prefix: 'w', keysOnly: true })).count).toBe(written);
    } finally {
      client.close();
    }
  });
});
