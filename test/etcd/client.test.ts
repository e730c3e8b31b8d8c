import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdClient, type EtcdClient } from '../../shared/etcd/client.ts';
import { EtcdConnectionError, type EtcdError, EtcdServerError } from '../../shared/etcd/errors.ts';
import { verifySnapshotFile } from '../../shared/etcd/snapshot-verify.ts';
import {
  etcdVersion,
  findEtcd35,
  findEtcdutl,
  LocalEtcd,
  makeCerts,
  type TlsFiles,
  until,
  withRestoredSnapshot,
} from './cluster.ts';

const run = promisify(execFile);

const rejection = async (p: Promise<unknown>): Promise<EtcdError> => {
  try {
    await p;
  } catch (error) {
    return error as EtcdError;
  }
  throw new Error('expected a rejection');
};

/** Calls `fn` until it stops failing retryably (as a handler would, over several runs). */
const retrying = <T>(what: string, fn: () => Promise<T>) =>
  until(what, 60_000, async () => {
    try {
      return await fn();
    } catch (error) {
      if ((error as EtcdError).retry) return undefined;
      throw error;
    }
  });

/** Streams a snapshot to `file`; checks its size and trailing hash; returns the snapshot's facts. */
const saveSnapshot = async (c: EtcdClient, file: string) => {
  const snap = await c.snapshot();
  await pipeline(snap.stream, createWriteStream(file));
  expect((await stat(file)).size).toBe(snap.size);
  expect(await verifySnapshotFile(file)).toEqual({ size: snap.size, dbSize: snap.dbSize });
  return snap;
};

/** `etcdutl snapshot status` of the file, when the test bed built etcdutl. */
const etcdutlStatus = async (etcdutl: string, file: string) => {
  const { stdout } = await run(etcdutl, ['snapshot', 'status', file, '-w', 'json']);
  return JSON.parse(stdout) as { revision: number; totalKey: number; totalSize: number };
};

let etcdutl: string | undefined;
let version = '';
beforeAll(async () => {
  version = await etcdVersion();
  etcdutl = await findEtcdutl();
  // The test bed builds it with the etcd images (ensureGoBinaries, before any test): never skipped.
  if (!etcdutl) throw new Error('etcdutl is not built: infra/testbed/build/build-go.sh <cache> etcd-images');
});

describe('etcd client against a real 3-member cluster', () => {
  let dir = '';
  let etcd: LocalEtcd;
  let c: EtcdClient;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-etcd-'));
    etcd = new LocalEtcd(dir);
    const ms = [await etcd.define('m0'), await etcd.define('m1'), await etcd.define('m2')];
    for (const m of ms) await etcd.start(m, ms, 'new');
    c = createEtcdClient({ endpoints: ms.map((m) => m.clientURL), timeoutMs: 5000 });
    await until('a leader', 30_000, () => c.findLeader());
  });

  afterAll(async () => {
    c?.close();
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('puts, gets, ranges over a prefix with a limit, deletes', async () => {
    const { revision } = await c.put('tideway/a', 'one');
    expect(revision).toBeGreaterThan(0);
    await c.put('tideway/b', Buffer.from([0, 1, 2, 255]));
    await c.put('tideway0', 'outside the prefix');
    expect((await c.get('tideway/a'))?.value.toString()).toBe('one');
    expect((await c.get('tideway/b'))?.value).toEqual(Buffer.from([0, 1, 2, 255]));
    expect(await c.get('tideway/none')).toBeUndefined();
    const page = await c.range({ prefix: 'tideway/', limit: 1 });
    expect([page.kvs.map((kv) => kv.key.toString()), page.more, page.count]).toEqual([
      ['tideway/a'],
      true,
      2,
    ]);
    expect((await c.range({ prefix: 'tideway/', serializable: true })).kvs).toHaveLength(2);
    expect(await c.delete({ prefix: 'tideway/' })).toEqual({ deleted: 2 });
    expect(await c.delete('tideway0')).toEqual({ deleted: 1 });
    expect((await c.range({ prefix: 'tideway' })).count).toBe(0);
  });

  it('status: every member agrees on one leader', async () => {
    const statuses = await Promise.all(etcd.members.map((m) => c.status(m.clientURL)));
    const leaders = new Set(statuses.map((s) => s.leader));
    expect(leaders.size).toBe(1);
    const leader = [...leaders][0];
    expect(statuses.filter((s) => s.memberId === leader)).toHaveLength(1);
    for (const s of statuses) {
      expect(s.version).toBe(version);
      expect(s.raftIndex).toBeGreaterThan(0);
      expect(s.raftAppliedIndex).toBeGreaterThan(0);
      expect(s.dbSize).toBeGreaterThan(0);
      expect(s.dbSizeInUse).toBeGreaterThan(0);
      expect(s.isLearner).toBe(false);
      expect(s.errors).toEqual([]);
      expect(s.memberId).toMatch(/^\d+$/);
    }
    expect((await c.findLeader())?.memberId).toBe(leader);
  });

  it('adds a learner, starts it, promotes it once it has caught up', async () => {
    const list = await c.memberList();
    expect(list.members.map((m) => m.name).sort()).toEqual(['m0', 'm1', 'm2']);
    const m3 = await etcd.define('m3');
    // A cluster that just started is 'unhealthy cluster' (retry) for a few seconds.
    const { member, members } = await retrying('the learner added', () =>
      c.memberAdd([m3.peerURL], { isLearner: true }),
    );
    expect(member).toMatchObject({ name: '', peerURLs: [m3.peerURL], clientURLs: [], isLearner: true });
    expect(members).toHaveLength(4);
    // Not started: never in sync with the leader.
    const early = await rejection(c.memberPromote(member.id));
    expect(early).toBeInstanceOf(EtcdServerError);
    expect([early.reason, early.retry]).toEqual(['LearnerNotReady', true]);
    // The same peer URL again is final. etcd derives a new member's id from its peer URLs and the
    // time in seconds, so within the same second it is the id that already exists.
    const twice = await rejection(c.memberAdd([m3.peerURL], { isLearner: true }));
    expect(['PeerURLExists', 'MemberExists']).toContain(twice.reason);
    expect(twice.retry).toBe(false);

    await etcd.start(m3, etcd.members, 'existing');
    const promoted = await until('the learner promoted', 90_000, async () => {
      try {
        return await c.memberPromote(member.id);
      } catch (error) {
        if ((error as EtcdError).reason === 'LearnerNotReady') return undefined;
        throw error;
      }
    });
    expect(promoted.find((m) => m.id === member.id)?.isLearner).toBe(false);
    const started = await until('m3 published', 30_000, async () =>
      (await c.memberList()).members.find((m) => m.id === member.id && m.name === 'm3'),
    );
    expect(started.clientURLs).toEqual([m3.clientURL]);
    const s = await until('m3 serving as a voter', 30_000, async () => {
      const st = await c.status(m3.clientURL);
      return st.isLearner ? undefined : st;
    });
    expect(s.leader).toBeDefined();
    // A peer URL update: the same URL plus another name for it.
    const localhostPeer = m3.peerURL.replace('127.0.0.1', 'localhost');
    const updated = await c.memberUpdate(member.id, [m3.peerURL, localhostPeer]);
    expect([...(updated.find((m) => m.id === member.id)?.peerURLs ?? [])].sort()).toEqual(
      [m3.peerURL, localhostPeer].sort(),
    );
    await c.memberUpdate(member.id, [m3.peerURL]);
  });

  it('moves leadership to another voter (sent to the leader)', async () => {
    const leader = await until('a leader', 10_000, () => c.findLeader());
    // One of the client's endpoints (m0–m2), so that findLeader sees it lead.
    const target = (await c.memberList()).members.find(
      (m) => m.id !== leader.memberId && !m.isLearner && m.name !== 'm3',
    );
    if (!target) throw new Error('no other voter');
    const { endpoint } = await c.moveLeader(target.id);
    expect(endpoint).toBe(leader.endpoint);
    const now = await until('the new leader', 10_000, async () => {
      const l = await c.findLeader();
      return l?.memberId === target.id ? l : undefined;
    });
    expect(now.endpoint).toBe(target.clientURLs[0]);
    // To a member that is not there: final.
    const bad = await rejection(c.moveLeader('12345', { endpoint: now.endpoint }));
    expect(bad.retry).toBe(false);
    // Sent to a follower: etcd refuses, retryably (find the leader again).
    const follower =
      etcd.members.find((m) => m.clientURL !== now.endpoint && m.name !== 'm3')?.clientURL ?? '';
    const notLeader = await rejection(c.moveLeader(leader.memberId, { endpoint: follower }));
    expect([notLeader.reason, notLeader.retry]).toEqual(['NotLeader', true]);
  });

  it('removes a member (not the leader); removing it again is MemberNotFound', async () => {
    const leader = await until('a leader', 10_000, () => c.findLeader());
    const m3 = (await c.memberList()).members.find((m) => m.name === 'm3');
    if (!m3) throw new Error('m3 is not a member');
    expect(m3.id).not.toBe(leader.memberId);
    // Right after a promotion etcd may refuse a reconfiguration for a moment (retry).
    const left = await retrying('m3 removed', () => c.memberRemove(m3.id));
    expect(left.map((m) => m.name).sort()).toEqual(['m0', 'm1', 'm2']);
    const again = await rejection(c.memberRemove(m3.id));
    expect([again.reason, again.retry]).toEqual(['MemberNotFound', false]);
  });

  it('lists no alarms, defragments a member, and the members’ KV hashes agree', async () => {
    expect(await c.alarmList()).toEqual([]);
    const voters = etcd.members.filter((m) => m.name !== 'm3');
    const before = await c.status(voters[0]?.clientURL ?? '');
    await c.defragment(before.endpoint);
    const after = await c.status(before.endpoint);
    expect(after.dbSize).toBeLessThanOrEqual(before.dbSize);
    expect(after.errors).toEqual([]);
    const { revision } = await c.put('hash/probe', 'x');
    const hashes = await until('hashes at one revision', 10_000, async () => {
      const hs = await Promise.all(voters.map((m) => c.hashKV(m.clientURL, { revision })));
      return new Set(hs.map((h) => h.hash)).size === 1 ? hs : undefined;
    });
    expect(hashes.every((h) => h.header.revision >= revision)).toBe(true);
  });

  it('streams a snapshot to a file: size matches, trailing SHA-256 verifies, etcdutl accepts it', async () => {
    // Some megabytes, so the stream is many messages.
    const value = Buffer.alloc(64 * 1024, 'v');
    let last = 0;
    for (let i = 0; i < 48; i++) last = (await c.put(`bulk/${i}`, value)).revision;
    const file = join(dir, 'snapshot.db');
    const snap = await saveSnapshot(c, file);
    expect(snap.dbSize).toBeGreaterThan(3 * 1024 * 1024);
    expect(snap.storageVersion ?? '3.6').toMatch(/^3\.\d+/);
    // Given up part way, by destroying the stream or by the signal: the stream ends at once, etcd
    // serves on, and the next snapshot is whole.
    const dropped = await c.snapshot({ endpoint: snap.endpoint });
    for await (const _ of dropped.stream) break;
    expect(dropped.stream.destroyed).toBe(true);
    const ac = new AbortController();
    const aborted = await c.snapshot({ endpoint: snap.endpoint, signal: ac.signal });
    const reading = (async () => {
      for await (const _ of aborted.stream) ac.abort();
    })();
    expect((await rejection(reading)).reason).toBe('Aborted');
    await saveSnapshot(c, join(dir, 'again.db'));
    if (!etcdutl) throw new Error('no etcdutl');
    const st = await etcdutlStatus(etcdutl, file);
    expect(st.revision).toBeGreaterThanOrEqual(last);
    expect(st.totalKey).toBeGreaterThanOrEqual(48);
    // Restore it into a new one-member cluster and read a key back: the file is a usable backup.
    await withRestoredSnapshot(etcdutl, file, join(dir, 'restored'), async (rc) => {
      const kv = await until('the restored member serving', 30_000, () => rc.get('bulk/47'));
      expect(kv.value.equals(value)).toBe(true);
    });
  });

  it('fails over reads past a dead endpoint; a call to it alone is a retryable connection error', async () => {
    const dead = etcd.members.find((m) => m.name === 'm3');
    if (!dead) throw new Error('no m3');
    // Removed, it stops by itself; stopped here in case it has not yet.
    await etcd.stopMember(dead);
    const mixed = createEtcdClient({
      endpoints: [dead.clientURL, ...etcd.members.slice(0, 3).map((m) => m.clientURL)],
    });
    try {
      expect((await mixed.memberList()).members).toHaveLength(3);
      const e = await rejection(mixed.status(dead.clientURL));
      expect(e).toBeInstanceOf(EtcdConnectionError);
      expect(e.retry).toBe(true);
    } finally {
      mixed.close();
    }
  });
});

describe('NOSPACE: the alarm, and recovery by compact, defragment, disarm', () => {
  let dir = '';
  let etcd: LocalEtcd;
  let c: EtcdClient;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-etcd-quota-'));
    etcd = new LocalEtcd(dir);
    const q0 = await etcd.define('q0');
    await etcd.start(q0, [q0], 'new', ['--quota-backend-bytes=4194304']);
    c = createEtcdClient({ endpoints: [q0.clientURL] });
    await until('a leader', 30_000, () => c.findLeader());
  });

  afterAll(async () => {
    c?.close();
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('reports NOSPACE in alarms and status, refuses puts for good, recovers', async () => {
    const endpoint = etcd.members[0]?.clientURL ?? '';
    const value = Buffer.alloc(256 * 1024, 'q');
    let full: EtcdError | undefined;
    for (let i = 0; i < 200 && !full; i++) {
      full = await c.put(`fill/${i % 8}`, value).then(
        () => undefined,
        (e: EtcdError) => e,
      );
    }
    expect(full).toBeInstanceOf(EtcdServerError);
    expect([full?.reason, full?.retry]).toEqual(['NoSpace', false]);
    const status = await c.status(endpoint);
    const alarms = await c.alarmList();
    expect(alarms).toEqual([{ memberId: status.memberId, alarm: 'NOSPACE' }]);
    expect(status.errors.some((e) => e.includes('NOSPACE'))).toBe(true);
    expect(status.dbSizeQuota).toBe(4194304);
    // Recovery: drop the history, give the space back, then clear the alarm.
    await c.compact(status.header.revision, { physical: true });
    await c.defragment(endpoint);
    expect((await c.status(endpoint)).dbSize).toBeLessThan(status.dbSize);
    expect(await c.alarmDisarm(alarms[0]!)).toEqual(alarms);
    expect(await c.alarmList()).toEqual([]);
    await c.put('after', 'ok');
    expect((await c.get('after'))?.value.toString()).toBe('ok');
    // Compacting again at the same revision is final.
    const again = await rejection(c.compact(status.header.revision));
    expect([again.reason, again.retry]).toEqual(['Compacted', false]);
  });
});

describe('etcd client over TLS (client certificates required)', () => {
  let dir = '';
  let etcd: LocalEtcd;
  let c: EtcdClient;
  let files: TlsFiles & { clientOnlyCert: string; clientOnlyKey: string };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-etcd-tls-'));
    files = await makeCerts(join(dir, 'pki'));
    etcd = new LocalEtcd(dir, files);
    const ms = [await etcd.define('t0'), await etcd.define('t1'), await etcd.define('t2')];
    for (const m of ms) await etcd.start(m, ms, 'new');
    // As they would come out of a Kubernetes Secret: buffers.
    const tls = {
      ca: await readFile(files.ca),
      cert: await readFile(files.clientOnlyCert),
      key: await readFile(files.clientOnlyKey),
    };
    c = createEtcdClient({ endpoints: ms.map((m) => m.clientURL), tls });
    await until('a leader over TLS', 30_000, () => c.findLeader());
  });

  afterAll(async () => {
    c?.close();
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('status of every member, put/get, member list', async () => {
    const statuses = await Promise.all(etcd.members.map((m) => c.status(m.clientURL)));
    expect(new Set(statuses.map((s) => s.leader)).size).toBe(1);
    expect(statuses.every((s) => s.leader !== undefined && s.version === version)).toBe(true);
    await c.put('tls/k', 'v');
    expect((await c.get('tls/k'))?.value.toString()).toBe('v');
    expect((await c.memberList()).members.every((m) => m.clientURLs[0]?.startsWith('https://'))).toBe(true);
  });

  it('streams a snapshot that verifies', async () => {
    const file = join(dir, 'tls-snapshot.db');
    await saveSnapshot(c, file);
    expect(etcdutl).toBeDefined();
    if (etcdutl) expect((await etcdutlStatus(etcdutl, file)).totalKey).toBeGreaterThanOrEqual(1);
  });

  it('refuses, as a TLS error, a server it cannot verify; etcd refuses a client without certificate', async () => {
    const endpoint = etcd.members[0]?.clientURL ?? '';
    const noCa = createEtcdClient({
      endpoints: [endpoint],
      tls: { cert: await readFile(files.clientOnlyCert), key: await readFile(files.clientOnlyKey) },
    });
    const noCert = createEtcdClient({ endpoints: [endpoint], tls: { ca: await readFile(files.ca) } });
    try {
      const e = await rejection(noCa.status(endpoint));
      expect(e).toBeInstanceOf(EtcdConnectionError);
      expect(e.reason).toBe('TLS');
      const refused = await rejection(noCert.status(endpoint));
      expect(refused).toBeInstanceOf(EtcdConnectionError);
    } finally {
      noCa.close();
      noCert.close();
    }
  });
});

// etcd 3.5's gateway is grpc-gateway v1 (other error bodies). The test bed builds etcd 3.5 with its
// etcd images (ensureGoBinaries, before any test): a missing one fails, it is never skipped.
const etcd35 = findEtcd35();
describe('etcd client against etcd 3.5', () => {
  let dir = '';
  let etcd: LocalEtcd;
  let c: EtcdClient;

  beforeAll(async () => {
    if (!etcd35)
      throw new Error('etcd 3.5 is not built: infra/testbed/build/build-go.sh <cache> etcd-images');
    dir = await mkdtemp(join(tmpdir(), 'tideway-etcd35-'));
    etcd = new LocalEtcd(dir, undefined, etcd35);
    const ms = [await etcd.define('o0'), await etcd.define('o1'), await etcd.define('o2')];
    for (const m of ms) await etcd.start(m, ms, 'new');
    c = createEtcdClient({ endpoints: ms.map((m) => m.clientURL) });
    await until('a leader', 30_000, () => c.findLeader());
  });

  afterAll(async () => {
    c?.close();
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('status, KV, members and their errors, snapshot', async () => {
    const s = await c.status(etcd.members[0]?.clientURL ?? '');
    expect(s.version).toMatch(/^3\.5\./);
    expect(s.leader).toBeDefined();
    await c.put('old/k', 'v');
    expect((await c.get('old/k'))?.value.toString()).toBe('v');
    expect((await c.memberList()).members).toHaveLength(3);
    const missing = await rejection(c.memberRemove('12345'));
    expect([missing.reason, missing.retry]).toEqual(['MemberNotFound', false]);
    const extra = await etcd.define('o3');
    const { member } = await retrying('a learner added', () =>
      c.memberAdd([extra.peerURL], { isLearner: true }),
    );
    const early = await rejection(c.memberPromote(member.id));
    expect([early.reason, early.retry]).toEqual(['LearnerNotReady', true]);
    await retrying('the learner removed', () => c.memberRemove(member.id));
    const file = join(dir, 'snapshot.db');
    const snap = await saveSnapshot(c, file);
    expect(snap.storageVersion).toBeUndefined();
  });
});
