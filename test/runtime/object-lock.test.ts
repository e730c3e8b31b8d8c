import { afterAll, describe, expect, it } from 'vitest';
import { type Bus, connectBus } from '../../shared/bus/connect.ts';
import { objectLocks } from '../../shared/runtime/object-lock.ts';
import { bed } from '../support/bed.ts';

/** The per-object lock on real JetStream: what the runtime's one-mutation-at-a-time rests on. */
describe('object locks on JetStream', () => {
  const { info } = bed();
  const stream = `LOCKS_TEST_${Date.now() % 100000}`;
  const buses: Bus[] = [];
  const connect = async (name: string) => {
    const bus = await connectBus(info.natsUrl, name);
    buses.push(bus);
    return bus;
  };

  afterAll(async () => {
    await buses[0]?.jsm.streams.delete(stream).catch(() => undefined);
    for (const bus of buses) await bus.close();
  });

  it('excludes a second holder until the first releases, and leaves nothing behind on release', async () => {
    const bus = await connect('locks-a');
    const a = await objectLocks(bus, { stream, owner: 'a', ttlMs: 6000 });
    const b = await objectLocks(await connect('locks-b'), { stream, owner: 'b', ttlMs: 6000 });
    const held = await a.acquire('Probe/ns/x', {});
    let bHas = false;
    const waiting = b.acquire('Probe/ns/x', {}).then((lease) => {
      bHas = true;
      return lease;
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(bHas).toBe(false);
    // Another object is not held up.
    await (await b.acquire('Probe/ns/y', {})).release();

    const released = Date.now();
    await held.release();
    const second = await waiting;
    expect(Date.now() - released).toBeLessThan(1000);
    expect(second.token()).toBeGreaterThan(held.token());
    await second.release();
    // Released by deleting the message, not with a tombstone: the next taker needs one write.
    expect((await bus.jsm.streams.info(stream)).state.messages).toBe(0);
  });

  it("takes over a crashed holder's lock once its lease ages out, and the holder learns it lost it", async () => {
    const crashStream = `${stream}_CRASH`;
    const crashing = await connect('locks-crash');
    const a = await objectLocks(crashing, { stream: crashStream, owner: 'a', ttlMs: 3000 });
    const b = await objectLocks(await connect('locks-c'), { stream: crashStream, owner: 'b', ttlMs: 3000 });
    const held = await a.acquire('Probe/ns/z', {});
    const start = Date.now();
    await crashing.close(); // renewals fail from now on
    const taken = await b.acquire('Probe/ns/z', {});
    const waited = Date.now() - start;
    expect(waited).toBeGreaterThan(2500);
    expect(waited).toBeLessThan(6000);
    expect(held.lost.aborted).toBe(true);
    await taken.release();
    await buses[0]?.jsm.streams.delete(crashStream);
  });

  it('keeps a lock past its TTL by renewing it, under the TTL of the stream that was there first', async () => {
    const renewStream = `${stream}_RENEW`;
    const a = await objectLocks(await connect('locks-r1'), { stream: renewStream, owner: 'a', ttlMs: 2000 });
    // A process configured otherwise adopts the stream's TTL rather than cutting others' leases.
    const b = await objectLocks(await connect('locks-r2'), {
      stream: renewStream,
      owner: 'b',
      ttlMs: 500,
    });
    const held = await a.acquire('Probe/ns/r', {});
    const meanwhile = await b.acquire('Probe/ns/r', { signal: AbortSignal.timeout(5000) }).then(
      () => 'taken',
      (e: unknown) => (e as Error).name,
    );
    expect(meanwhile).toBe('LockAbortedError');
    expect(held.lost.aborted).toBe(false);
    await held.release();
    const after = await b.acquire('Probe/ns/r', { signal: AbortSignal.timeout(1000) });
    expect(after.token()).toBeGreaterThan(held.token());
    await after.release();
    await buses[0]?.jsm.streams.delete(renewStream);
  });
});
