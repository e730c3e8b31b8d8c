import { describe, expect, it } from 'vitest';
import {
  classifyServerError,
  EtcdConnectionError,
  EtcdProtocolError,
  EtcdServerError,
  GrpcCode,
  isRetryable,
} from './errors.ts';
import { errorFromAnswer } from './http.ts';

// Messages and codes as etcd sends them (api/v3rpc/rpctypes/error.go, 3.5 and 3.6).
const cases: [code: number, message: string, reason: string, retry: boolean][] = [
  [9, 'etcdserver: can only promote a learner member which is in sync with leader', 'LearnerNotReady', true],
  [9, 'etcdserver: too many learner members in cluster', 'TooManyLearners', true],
  [
    2,
    'etcdserver: re-configuration failed due to not enough started members',
    'NotEnoughStartedMembers',
    true,
  ],
  [9, 'etcdserver: can only promote a learner member', 'MemberNotLearner', false],
  [5, 'etcdserver: member not found', 'MemberNotFound', false],
  [9, 'etcdserver: Peer URLs already exists', 'PeerURLExists', false],
  [9, 'etcdserver: member ID already exist', 'MemberExists', false],
  [3, 'etcdserver: given member URLs are invalid', 'BadMemberURLs', false],
  [14, 'etcdserver: no leader', 'NoLeader', true],
  [9, 'etcdserver: not leader', 'NotLeader', true],
  [14, 'etcdserver: leader changed', 'LeaderChanged', true],
  [14, 'etcdserver: request timed out', 'Timeout', true],
  [14, 'etcdserver: request timed out, possibly due to previous leader failure', 'Timeout', true],
  [14, 'etcdserver: request timed out, leader transfer took too long', 'Timeout', true],
  [14, 'etcdserver: unhealthy cluster', 'UnhealthyCluster', true],
  [14, 'etcdserver: server stopped', 'ServerStopped', true],
  [9, 'etcdserver: not capable', 'NotCapable', true],
  [9, 'etcdserver: rpc not supported for learner', 'NotSupportedForLearner', true],
  [8, 'etcdserver: too many requests', 'TooManyRequests', true],
  [8, 'etcdserver: mvcc: database space exceeded', 'NoSpace', false],
  [15, 'etcdserver: corrupt cluster', 'Corrupt', false],
  [9, 'etcdserver: bad leader transferee', 'BadLeaderTransferee', false],
  [3, 'etcdserver: request is too large', 'RequestTooLarge', false],
  [11, 'etcdserver: mvcc: required revision has been compacted', 'Compacted', false],
  [9, 'etcdserver: cluster ID mismatch', 'ClusterIdMismatch', false],
  // Not etcd's own: the code decides.
  [3, "invalid character 'g' looking for beginning of value", 'InvalidArgument', false],
  [5, 'Not Found', 'NotFound', false],
  [14, 'connection error: desc = "transport: error while dialing"', 'Unavailable', true],
  [4, 'context deadline exceeded', 'DeadlineExceeded', true],
  [12, 'unknown service', 'Unimplemented', false],
  [16, 'etcdserver: invalid auth token', 'Unauthenticated', false],
];

describe('classifyServerError', () => {
  it.each(cases)('code %i %s → %s (retry %s)', (code, message, reason, retry) => {
    expect(classifyServerError(code, message)).toEqual({ reason, retry });
    const e = new EtcdServerError(code, message, 'http://a:2379');
    expect([e.reason, e.retry, e.code, e.endpoint, e.message]).toEqual([
      reason,
      retry,
      code,
      'http://a:2379',
      message,
    ]);
    expect(isRetryable(e)).toBe(retry);
  });

  it('names unknown codes by number', () => {
    expect(classifyServerError(99, 'x')).toEqual({ reason: 'Code99', retry: false });
  });
});

describe('errorFromAnswer', () => {
  it('reads etcd 3.6 bodies ({code, message})', () => {
    const e = errorFromAnswer(404, '{"code":5,"message":"etcdserver: member not found"}', 'http://a:1', '/p');
    expect(e).toBeInstanceOf(EtcdServerError);
    expect((e as EtcdServerError).reason).toBe('MemberNotFound');
  });

  it('reads etcd 3.5 bodies ({error, code, message}) and stream errors', () => {
    const v35 = errorFromAnswer(
      503,
      '{"error":"etcdserver: no leader","code":14,"message":"etcdserver: no leader"}',
      'h',
      '/p',
    );
    expect([(v35 as EtcdServerError).reason, (v35 as EtcdServerError).retry]).toEqual(['NoLeader', true]);
    const stream35 = errorFromAnswer(
      412,
      '{"error":{"grpc_code":9,"http_code":412,"message":"etcdserver: not leader","http_status":"Precondition Failed"}}',
      'h',
      '/p',
    );
    expect((stream35 as EtcdServerError).code).toBe(GrpcCode.FailedPrecondition);
    const stream36 = errorFromAnswer(
      503,
      '{"error":{"code":14,"message":"etcdserver: leader changed"}}\n',
      'h',
      '/p',
    );
    expect((stream36 as EtcdServerError).reason).toBe('LeaderChanged');
  });

  it('a body that is no gRPC status is a protocol error, retryable only for 5xx', () => {
    const page = errorFromAnswer(502, '<html>Bad Gateway</html>', 'h', '/v3/kv/put');
    expect(page).toBeInstanceOf(EtcdProtocolError);
    expect((page as EtcdProtocolError).retry).toBe(true);
    expect((errorFromAnswer(400, 'nope', 'h', '/p') as EtcdProtocolError).retry).toBe(false);
  });
});

describe('EtcdConnectionError', () => {
  it('is always worth a retry and says whether the request surely stayed here', () => {
    const e = new EtcdConnectionError('Connection', 'refused', { notSent: true });
    expect([e.retry, e.notSent, e.reason, e.name]).toEqual([true, true, 'Connection', 'EtcdConnectionError']);
  });
});
