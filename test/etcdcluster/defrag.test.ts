import { describe, expect, it } from 'vitest';
import type { EtcdClient } from '../../shared/etcd/client.ts';
import { createEtcdClient } from '../../shared/etcd/gateway-client.ts';
import { bed, sleep, until } from '../support/bed.ts';
import { etcdFunctionsFor } from './support.ts';

type Event = {
  reason?: string;
  note?: string;
  regarding?: { name?: string };
  eventTime?: string;
  metadata?: { creationTimestamp?: string };
};

/**
 * Issue 15, item 6: periodic defragmentation as an option. Off by default; with
 * `defragmentation: { every }` each member's database is defragmented once a round, one member
 * at a time, the leader last, recorded in the status, while clients keep writing.
 */
describe('etcd periodic defragmentation', () => {
  const b = bed();
  const { ns, etcd } = etcdFunctionsFor(b, 'etcd-defrag');

  const events = async (name: string) =>
    (
      JSON.parse(await b.kubectl('get', 'events.events.k8s.io', '-n', ns(), '-o', 'json')) as {
        items: Event[];
      }
    ).items
      .filter((e) => e.regarding?.name === name)
      .sort((x, y) => (x.eventTime ?? '').localeCompare(y.eventTime ?? ''));

  /** Each member's own status (db size, in use), by member id. */
  const sizes = async (client: EtcdClient) => Promise.all(client.endpoints.map((e) => client.status(e)));

  it('refuses an interval it cannot read, saying what to write', async () => {
    await expect(etcd.apply('bad', { size: 1, defragmentation: { every: '1d' } })).rejects.toMatchObject({
      stderr: expect.stringContaining('defragmentation.every must be a whole number of minutes or hours'),
    });
    await expect(etcd.apply('bad', { size: 1, defragmentation: {} })).rejects.toMatchObject({
      stderr: expect.stringContaining('every'),
    });
  });

  it('defragments every member, followers first and the leader last, while a writer loses nothing', async () => {
    await etcd.apply('df', { size: 3 });
    await etcd.ready('df', 3);
    const client = await etcd.client('df');
    try {
      // Fragment the databases: write ~30 MiB of history, delete it and compact it away. The
      // files keep their size (dbSize) while the pages are free inside them.
      const value = Buffer.alloc(100 * 1024, 7);
      let revision = 0;
      for (let round = 0; round < 3; round++)
        for (let k = 0; k < 100; k++) revision = (await client.put(`junk/${k}`, value)).revision;
      await client.delete({ prefix: 'junk/' });
      revision = (await client.put('marker', 'x')).revision;
      await client.compact(revision, { physical: true, timeoutMs: 30_000 });
      let seenSizes = '';
      const before = await until(
        'every member’s file large after the history reached it',
        async () => {
          const s = await sizes(client);
          seenSizes = s.map((x) => `${x.dbSizeInUse}/${x.dbSize}`).join(', ');
          return s.every((x) => x.dbSize > 20 * 1024 * 1024) ? s : undefined;
        },
        60_000,
        500,
      ).catch((error: Error) => {
        throw new Error(`${error.message} (in use/size: ${seenSizes})`);
      });
      console.log(`before: in use/size ${seenSizes}`);

      // Nothing happens while the option is off (the cluster is older than any interval here).
      await sleep(3000);
      expect((await etcd.get('df')).status?.lastDefragmentation).toBeUndefined();
      expect((await events('df')).filter((e) => e.reason === 'Defragmented')).toEqual([]);

      // A writer at the members' own addresses, each write retried once.
      let stop = false;
      let written = 0;
      const failedTwice: string[] = [];
      const endpoints = client.endpoints;
      const writer = (async () => {
        const w = createEtcdClient({ endpoints, timeoutMs: 5000 });
        try {
          for (let i = 0; !stop; i++) {
            let ok = false;
            for (let attempt = 0; attempt < 2 && !ok; attempt++) {
              try {
                await w.put(`w/${String(i).padStart(6, '0')}`, String(i));
                ok = true;
              } catch (error) {
                if (attempt === 1) failedTwice.push(`w/${i}: ${(error as Error).message}`);
                await sleep(500);
              }
            }
            if (!ok) break;
            written = i + 1;
            await sleep(20);
          }
        } finally {
          w.close();
        }
      })();

      const enabledAt = Date.now();
      // Due one minute after the cluster was made.
      await etcd.apply('df', { size: 3, defragmentation: { every: '1m' } });
      const after = await until(
        'a round of defragmentation recorded',
        async () => {
          const c = await etcd.get('df');
          return c.status?.lastDefragmentation ? c : undefined;
        },
        150_000,
        1000,
      );
      stop = true;
      await writer;

      const members = after.status?.members ?? [];
      expect(members).toHaveLength(3);
      const times = members.map((m) => Date.parse(m.lastDefragmentation ?? ''));
      for (const t of times) expect(t).toBeGreaterThanOrEqual(enabledAt - 1000);
      // The round ends with the last member, and the leader was that one.
      expect(Date.parse(after.status?.lastDefragmentation ?? '')).toBe(Math.max(...times));
      const last = members.find((m) => Date.parse(m.lastDefragmentation ?? '') === Math.max(...times));
      expect(last?.name).toBe(after.status?.leader);
      // One at a time: the Events name three different members, the leader's last.
      const defragged = (await events('df')).filter((e) => e.reason === 'Defragmented');
      expect(defragged).toHaveLength(3);
      expect(new Set(defragged.map((e) => e.note?.split(':')[0]))).toEqual(
        new Set(
          members.map(
            (m) => `defragmented ${m.name}${m.name === after.status?.leader ? ' (the leader, last)' : ''}`,
          ),
        ),
      );
      expect(defragged.at(-1)?.note).toContain('(the leader, last)');

      // The files shrank to about what is in use.
      const now = await sizes(client);
      console.log(`after: in use/size ${now.map((x) => `${x.dbSizeInUse}/${x.dbSize}`).join(', ')}`);
      for (const s of now) {
        const was = before.find((x) => x.memberId === s.memberId);
        expect(s.dbSize).toBeLessThan((was?.dbSize ?? 0) / 2);
      }

      // Clients kept being served, the cluster stayed Ready and Healthy.
      expect(failedTwice).toEqual([]);
      expect(written).toBeGreaterThan(0);
      expect((await client.range({ prefix: 'w/', keysOnly: true })).count).toBe(written);
      const conditions = (after.status?.conditions ?? []) as { type: string; status: string }[];
      expect(conditions.find((x) => x.type === 'Ready')?.status).toBe('True');
      expect(conditions.find((x) => x.type === 'Healthy')?.status).toBe('True');
      // Each member's raft index lag behind the leader is in the status.
      for (const m of after.status?.members ?? []) expect(m.lag).toBeGreaterThanOrEqual(0);
    } finally {
      client.close();
    }
  });
});
