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

  describe('kept after release (keepMs)', () => {
    const keptStream = `${stream}_KEPT`;
    afterAll(async () => {
      await buses[0]?.jsm.streams.delete(keptStream).catch(() => undefined);
    });
    const pair = async (ttlMs = 6000) => {
      const a = await objectLocks(await connect('locks-k1'), {
        stream: keptStream,
        owner: 'a',
        ttlMs,
        keepMs: 60_000,
      });
      const b = await objectLocks(await connect('locks-k2'), {
        stream: keptStream,
        owner: 'b',
        ttlMs,
        keepMs: 60_000,
      });
      return { a, b };
    };
    const messages = async () => (await buses[0]!.jsm.streams.info(keptStream)).state.messages;

    it('takes a lock it kept again without writing, and still excludes others meanwhile', async () => {
      const { a, b } = await pair();
      const first = await a.acquire('Probe/ns/k1', {});
      await first.release();
      const before = await messages();
      const again = await a.tryAcquire('Probe/ns/k1');
      expect(again?.token()).toBe(first.token()); // no new write: the same message
      expect(await messages()).toBe(before);
      // In use again: another process is refused, and stays refused while it runs.
      expect(await b.tryAcquire('Probe/ns/k1')).toBeUndefined();
      await new Promise((r) => setTimeout(r, 300));
      expect(await b.tryAcquire('Probe/ns/k1')).toBeUndefined();
      expect(again?.held()).toBe(true);
      // Asked for while in use: given back when the run ends, not kept.
      const waiting = b.acquire('Probe/ns/k1', { signal: AbortSignal.timeout(3000) });
      await new Promise((r) => setTimeout(r, 100));
      const released = Date.now();
      await again?.release();
      const theirs = await waiting;
      expect(Date.now() - released).toBeLessThan(1000);
      expect(theirs.token()).toBeGreaterThan(first.token());
      expect(await a.tryAcquire('Probe/ns/k1')).toBeUndefined();
      await theirs.release();
      await a.close();
      await b.close();
      expect(await messages()).toBe(0);
    });

    it('gives a kept lock to another process that asks, long before it would age out', async () => {
      const { a, b } = await pair();
      const mine = await a.acquire('Probe/ns/k2', {});
      const stale = mine.token();
      await mine.release(); // kept, renewed, for 60 s
      const asked = Date.now();
      const theirs = await b.acquire('Probe/ns/k2', { signal: AbortSignal.timeout(3000) });
      expect(Date.now() - asked).toBeLessThan(1000);
      expect(theirs.token()).toBeGreaterThan(stale);
      // The lease a run here had is over: nothing acts on it any more.
      expect(mine.held()).toBe(false);
      await theirs.release();
      // Asked for once, the object is not kept here any more: its events reach others too.
      await (await a.acquire('Probe/ns/k2', {})).release();
      expect(await messages()).toBe(0);
      await a.close();
      await b.close();
    });

    it('never reuses a kept lock after a stall that outlasted it: the other process has it', async () => {
      const { a, b } = await pair(2000);
      const mine = await a.acquire('Probe/ns/k3', {});
      await mine.release();
      // The whole process stalls past the TTL: no renewal runs, the server ages the lock out.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2600);
      const theirs = await b.acquire('Probe/ns/k3', { signal: AbortSignal.timeout(3000) });
      expect(await a.tryAcquire('Probe/ns/k3')).toBeUndefined();
      await theirs.release();
      await a.close();
      await b.close();
    });

    it('gives every kept lock back on close', async () => {
      const { a, b } = await pair();
      for (const k of ['x1', 'x2', 'x3']) await (await a.acquire(`Probe/ns/${k}`, {})).release();
      expect(await messages()).toBe(3);
      await a.close();
      expect(await messages()).toBe(0);
      await b.close();
    });
  });
});
