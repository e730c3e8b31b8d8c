/**
 * # etcd client
 *
 * What the EtcdCluster engine talks to etcd with. It speaks etcd's v3 JSON gateway over plain
 * node:http(s) — `POST /v3/<service>/<call>` with rpc.proto's messages as JSON (proto field
 * names, 64-bit integers as decimal strings, bytes as base64), on by default on every client URL
 * in etcd 3.5 and 3.6 — so it needs no gRPC stack and no npm dependency.
 *
 *     const etcd = createEtcdClient({ endpoints: ['https://10.0.0.5:2379'], tls: { ca, cert, key } });
 *     const { members } = await etcd.memberList();
 *     const { member } = await etcd.memberAdd(['https://new:2380'], { isLearner: true });
 *     // start the member, then, until it stops saying LearnerNotReady:
 *     await etcd.memberPromote(member.id);
 *     const snap = await etcd.snapshot();     // snap.stream: the bytes `etcdctl snapshot save` writes
 *     etcd.close();
 *
 * - Member ids are uint64: strings here (decimal, as the gateway sends them), never numbers;
 *   `memberIdToHex` gives etcdctl's form.
 * - Reads (member list, alarm list, get/range, opening a snapshot) move on to the next endpoint
 *   when one fails; writes only when the request surely never left (connection refused).
 *   status, defragment and hashKV address one endpoint, as etcdctl's --endpoints does.
 * - Every error is an EtcdError with `retry` and a stable `reason` (errors.ts): 'LearnerNotReady',
 *   'TooManyLearners', 'NotEnoughStartedMembers', 'NoLeader', 'LeaderChanged', 'Timeout',
 *   'UnhealthyCluster' are worth retrying; 'MemberNotFound', 'PeerURLExists', bad requests not.
 *   A write that timed out may still have been applied (memberAdd again then fails with
 *   'PeerURLExists', or 'MemberExists' within the same second): look before adding again.
 * - Every call takes an AbortSignal and a timeout (whole call; the snapshot's bounds the wait for
 *   its first message, then an idle timeout applies).
 * - snapshot(): the database then its SHA-256, streamed in bounded memory, the hash checked
 *   before the stream ends (it errors instead of ending on a short or damaged stream);
 *   verifySnapshotFile / snapshotHashCheck check the same later (snapshot-verify.ts).
 * - TLS from buffers (a Kubernetes Secret's ca.crt, tls.crt, tls.key); no user/password auth.
 *
 * The integration test test/etcd/client.test.ts runs it against a real 3-member cluster.
 */
import type { Readable } from 'node:stream';
import type { CallOptions } from './http.ts';
import type { MemberId } from './ids.ts';
import type { Bytes } from './keys.ts';
import type {
  Alarm,
  EndpointStatus,
  HashKV,
  KeyValue,
  Member,
  RangeResult,
  ResponseHeader,
} from './types.ts';

export type { CallOptions, EtcdTls } from './http.ts';

export type EtcdSnapshot = {
  /** The database then its 32-byte SHA-256: write it as is, `etcdutl snapshot restore` takes it. */
  readonly stream: Readable;
  /** Bytes the stream yields in all (dbSize + 32). */
  readonly size: number;
  readonly dbSize: number;
  /** etcd ≥ 3.6: the storage version of the data ("3.6.0"). */
  readonly storageVersion: string | undefined;
  readonly endpoint: string;
};

/** The one interface to etcd. */
export type EtcdClient = {
  readonly endpoints: readonly string[];

  /** `linearizable` (default true) reads through the leader: membership decisions need that. */
  memberList(o?: CallOptions & { linearizable?: boolean }): Promise<{
    header: ResponseHeader;
    members: Member[];
  }>;
  memberAdd(
    peerURLs: readonly string[],
    o?: CallOptions & { isLearner?: boolean },
  ): Promise<{ member: Member; members: Member[] }>;
  /** Fails with reason LearnerNotReady (retry) until the learner has caught up with the leader. */
  memberPromote(id: MemberId, o?: CallOptions): Promise<Member[]>;
  memberRemove(id: MemberId, o?: CallOptions): Promise<Member[]>;
  memberUpdate(id: MemberId, peerURLs: readonly string[], o?: CallOptions): Promise<Member[]>;

  /** One endpoint's status (any URL, not only the configured ones). */
  status(endpoint: string, o?: CallOptions): Promise<EndpointStatus>;
  /** The configured endpoint whose member is the leader, with its status; undefined if none is. */
  findLeader(o?: CallOptions): Promise<EndpointStatus | undefined>;

  alarmList(o?: CallOptions): Promise<Alarm[]>;
  /** Clears one alarm (after fixing its cause: a NOSPACE alarm needs compaction and defragment first). */
  alarmDisarm(alarm: Alarm, o?: CallOptions): Promise<Alarm[]>;

  /**
   * Hands leadership to `targetId` (a voting member). etcd takes this only from the leader: it is
   * sent to `o.endpoint`, else to the leader found among the endpoints or its client URLs.
   * Resolves the endpoint it was sent to.
   */
  moveLeader(targetId: MemberId, o?: CallOptions & { endpoint?: string }): Promise<{ endpoint: string }>;
  /** Defragments one member's database; it blocks that member meanwhile (default timeout 5 min). */
  defragment(endpoint: string, o?: CallOptions): Promise<void>;
  /** The KV hash at `revision` (0: latest) on one endpoint: equal across healthy members. */
  hashKV(endpoint: string, o?: CallOptions & { revision?: number }): Promise<HashKV>;

  put(key: Bytes, value: Bytes, o?: CallOptions): Promise<{ revision: number }>;
  get(key: Bytes, o?: CallOptions & { serializable?: boolean }): Promise<KeyValue | undefined>;
  range(
    o: CallOptions & { prefix: Bytes; limit?: number; serializable?: boolean; keysOnly?: boolean },
  ): Promise<RangeResult>;
  delete(key: Bytes | { prefix: Bytes }, o?: CallOptions): Promise<{ deleted: number }>;
  /**
   * Drops the history before `revision` (what etcd's auto-compaction does); `physical` waits until
   * it is gone from the backend, so that a defragment after it frees the space (NOSPACE recovery:
   * compact, defragment every member, disarm).
   */
  compact(revision: number, o?: CallOptions & { physical?: boolean }): Promise<void>;

  /**
   * The maintenance snapshot, streamed (first endpoint that answers, or `o.endpoint`). Resolves at
   * the first message; the stream then fails on a gateway error, a short stream, a hash mismatch,
   * `idleTimeoutMs` without data while it is being read (default 30 s), or the signal.
   * Destroying the stream closes the connection.
   */
  snapshot(
    o?: CallOptions & { endpoint?: string; idleTimeoutMs?: number; highWaterMark?: number },
  ): Promise<EtcdSnapshot>;

  /** Closes kept-alive connections. */
  close(): void;
  [Symbol.dispose](): void;
};

export { createEtcdClient, type EtcdClientOptions } from './gateway-client.ts';
