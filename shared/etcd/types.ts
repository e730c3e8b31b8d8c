import type { MemberId } from './ids.ts';

/** Which member answered, at which revision and raft term. */
export type ResponseHeader = {
  readonly clusterId: string;
  readonly memberId: MemberId;
  readonly revision: number;
  readonly raftTerm: number;
};

export type Member = {
  readonly id: MemberId;
  /** Empty until the member has started and published itself. */
  readonly name: string;
  readonly peerURLs: readonly string[];
  /** Empty until the member has started. */
  readonly clientURLs: readonly string[];
  readonly isLearner: boolean;
};

/** One endpoint's own view (etcdctl endpoint status). */
export type EndpointStatus = {
  readonly endpoint: string;
  readonly header: ResponseHeader;
  /** The member behind this endpoint. */
  readonly memberId: MemberId;
  /** Server version, e.g. "3.6.16". */
  readonly version: string;
  /** etcd ≥ 3.6 only. */
  readonly storageVersion: string | undefined;
  readonly dbSize: number;
  readonly dbSizeInUse: number;
  /** etcd ≥ 3.6 only: the backend quota (NOSPACE above it). */
  readonly dbSizeQuota: number | undefined;
  /** Undefined when this member knows no leader. */
  readonly leader: MemberId | undefined;
  readonly raftIndex: number;
  readonly raftTerm: number;
  readonly raftAppliedIndex: number;
  readonly isLearner: boolean;
  /** etcd's own: "etcdserver: no leader", and one line per active alarm ("memberID:… alarm:NOSPACE"). */
  readonly errors: readonly string[];
};

export const AlarmType = { None: 'NONE', NoSpace: 'NOSPACE', Corrupt: 'CORRUPT' } as const;
export type AlarmType = (typeof AlarmType)[keyof typeof AlarmType];

export type Alarm = { readonly memberId: MemberId; readonly alarm: AlarmType };

export type KeyValue = {
  readonly key: Buffer;
  readonly value: Buffer;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  /** Lease id (int64, as a string); "0" when none. */
  readonly lease: string;
};

export type RangeResult = {
  readonly header: ResponseHeader;
  readonly kvs: readonly KeyValue[];
  /** More keys matched than `limit` let through. */
  readonly more: boolean;
  /** How many keys matched in all. */
  readonly count: number;
};

export type HashKV = {
  readonly header: ResponseHeader;
  /** The KV store's hash up to hashRevision: equal on members at the same revision. */
  readonly hash: number;
  readonly compactRevision: number;
  /** etcd ≥ 3.6 only. */
  readonly hashRevision: number | undefined;
};
