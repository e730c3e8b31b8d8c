/** gRPC status codes, as the gateway reports them in error bodies. */
export const GrpcCode = {
  Ok: 0,
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

/** Every error this client throws: `retry` says whether the same call may succeed later as is. */
export class EtcdError extends Error {
  override readonly name: string = 'EtcdError';
  readonly retry: boolean;
  /** Stable, what callers branch on: an EtcdReason, or a gRPC code's name ('Unavailable'). */
  readonly reason: string;
  /** The endpoint that answered (or failed), when one did. */
  readonly endpoint: string | undefined;

  constructor(
    reason: string,
    message: string,
    o: { retry: boolean; endpoint?: string | undefined; cause?: unknown },
  ) {
    super(message, o.cause === undefined ? undefined : { cause: o.cause });
    this.reason = reason;
    this.retry = o.retry;
    this.endpoint = o.endpoint;
  }
}

/** etcd answered with a gRPC status: the message is etcd's own ("etcdserver: ..."). */
export class EtcdServerError extends EtcdError {
  override readonly name = 'EtcdServerError';
  readonly code: number;

  constructor(code: number, message: string, endpoint?: string) {
    const { reason, retry } = classifyServerError(code, message);
    super(reason, message, { retry, endpoint });
    this.code = code;
  }
}

/**
 * No answer: refused, reset, timed out, or TLS failed (a certificate not trusted or refused: a
 * rotated Secret may fix it, so it is retried like the rest). Another try may work.
 */
export class EtcdConnectionError extends EtcdError {
  override readonly name = 'EtcdConnectionError';
  /** The request surely did not reach etcd (refused, unresolvable): safe to send elsewhere. */
  readonly notSent: boolean;

  constructor(
    reason: 'Connection' | 'Timeout' | 'TLS',
    message: string,
    o: { endpoint?: string; cause?: unknown; notSent?: boolean },
  ) {
    super(reason, message, { retry: true, endpoint: o.endpoint, cause: o.cause });
    this.notSent = o.notSent ?? false;
  }
}

/** The caller's signal aborted the call. */
export class EtcdAbortedError extends EtcdError {
  override readonly name = 'EtcdAbortedError';

  constructor(message: string, o: { endpoint?: string; cause?: unknown } = {}) {
    super('Aborted', message, { retry: false, ...o });
  }
}

/** The answer was not what etcd's gateway sends: a wrong port, a proxy page, a schema mismatch. */
export class EtcdProtocolError extends EtcdError {
  override readonly name = 'EtcdProtocolError';

  constructor(message: string, o: { endpoint?: string; cause?: unknown; retry?: boolean } = {}) {
    super('Protocol', message, { retry: o.retry ?? false, endpoint: o.endpoint, cause: o.cause });
  }
}

/** A snapshot stream ended early or its trailing SHA-256 did not match: take another one. */
export class EtcdSnapshotError extends EtcdError {
  override readonly name = 'EtcdSnapshotError';

  constructor(reason: 'SnapshotTruncated' | 'SnapshotChecksum', message: string, endpoint?: string) {
    super(reason, message, { retry: true, endpoint });
  }
}

/**
 * The reasons this client gives (besides gRPC code names, e.g. 'Unavailable', for statuses it does
 * not know by message): callers compare `error.reason` with these.
 */
export const EtcdReason = {
  // etcd's answers
  LearnerNotReady: 'LearnerNotReady',
  TooManyLearners: 'TooManyLearners',
  NotEnoughStartedMembers: 'NotEnoughStartedMembers',
  MemberNotLearner: 'MemberNotLearner',
  MemberNotFound: 'MemberNotFound',
  PeerURLExists: 'PeerURLExists',
  MemberExists: 'MemberExists',
  BadMemberURLs: 'BadMemberURLs',
  NoLeader: 'NoLeader',
  NotLeader: 'NotLeader',
  LeaderChanged: 'LeaderChanged',
  Timeout: 'Timeout',
  UnhealthyCluster: 'UnhealthyCluster',
  ServerStopped: 'ServerStopped',
  NotCapable: 'NotCapable',
  NotSupportedForLearner: 'NotSupportedForLearner',
  TooManyRequests: 'TooManyRequests',
  NoSpace: 'NoSpace',
  Corrupt: 'Corrupt',
  BadLeaderTransferee: 'BadLeaderTransferee',
  RequestTooLarge: 'RequestTooLarge',
  Compacted: 'Compacted',
  FutureRevision: 'FutureRevision',
  ClusterIdMismatch: 'ClusterIdMismatch',
  EmptyKey: 'EmptyKey',
  // the client's own
  Connection: 'Connection',
  TLS: 'TLS',
  Aborted: 'Aborted',
  Protocol: 'Protocol',
  SnapshotTruncated: 'SnapshotTruncated',
  SnapshotChecksum: 'SnapshotChecksum',
} as const;
export type EtcdReason = (typeof EtcdReason)[keyof typeof EtcdReason];

const R = EtcdReason;

// etcd's own messages (api/v3rpc/rpctypes), matched by a distinctive part: the gRPC code alone is
// not enough (FailedPrecondition is both "learner not ready", worth waiting for, and "not a
// learner", which never changes), and one server error reaches the client with code Unknown.
// Order matters: the first match wins.
const known: readonly (readonly [fragment: string, reason: EtcdReason, retry: boolean])[] = [
  ['which is in sync with leader', R.LearnerNotReady, true],
  ['learner is not ready', R.LearnerNotReady, true],
  ['too many learner members', R.TooManyLearners, true],
  ['not enough started members', R.NotEnoughStartedMembers, true],
  ['can only promote a learner member', R.MemberNotLearner, false],
  ['member not found', R.MemberNotFound, false],
  ['peer urls already exist', R.PeerURLExists, false],
  ['member id already exist', R.MemberExists, false],
  ['given member urls are invalid', R.BadMemberURLs, false],
  ['no leader', R.NoLeader, true],
  ['not leader', R.NotLeader, true],
  ['leader changed', R.LeaderChanged, true],
  ['request timed out', R.Timeout, true],
  ['unhealthy cluster', R.UnhealthyCluster, true],
  ['server stopped', R.ServerStopped, true],
  ['not capable', R.NotCapable, true],
  ['rpc not supported for learner', R.NotSupportedForLearner, true],
  ['too many requests', R.TooManyRequests, true],
  ['database space exceeded', R.NoSpace, false],
  ['corrupt cluster', R.Corrupt, false],
  ['bad leader transferee', R.BadLeaderTransferee, false],
  ['request is too large', R.RequestTooLarge, false],
  ['required revision has been compacted', R.Compacted, false],
  ['required revision is a future revision', R.FutureRevision, false],
  ['cluster id mismatch', R.ClusterIdMismatch, false],
  ['key is not provided', R.EmptyKey, false],
];

const retryableCodes: ReadonlySet<number> = new Set([
  GrpcCode.Canceled,
  GrpcCode.Unknown,
  GrpcCode.DeadlineExceeded,
  GrpcCode.ResourceExhausted,
  GrpcCode.Aborted,
  GrpcCode.Internal,
  GrpcCode.Unavailable,
]);

const codeNames = new Map<number, string>(Object.entries(GrpcCode).map(([k, v]) => [v, k]));

/** What a gRPC status from etcd means for the caller. Pure; exported for its tests. */
export const classifyServerError = (code: number, message: string): { reason: string; retry: boolean } => {
  const lower = message.toLowerCase();
  for (const [fragment, reason, retry] of known) if (lower.includes(fragment)) return { reason, retry };
  // Unknown and Internal are mostly the gateway's own connection to etcd failing: worth a retry.
  return { reason: codeNames.get(code) ?? `Code${code}`, retry: retryableCodes.has(code) };
};

/** Whether the error is one of ours and worth retrying. */
export const isRetryable = (error: unknown): boolean => error instanceof EtcdError && error.retry;
