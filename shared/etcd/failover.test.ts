import { describe, expect, it } from 'vitest';
import { EtcdAbortedError, EtcdConnectionError, EtcdProtocolError, EtcdServerError } from './errors.ts';
import { endpointOrder, shouldFailOver } from './failover.ts';

describe('endpointOrder', () => {
  it('starts at the last endpoint that answered', () => {
    expect(endpointOrder(['a', 'b', 'c'], 1)).toEqual(['b', 'c', 'a']);
    expect(endpointOrder(['a', 'b', 'c'], 7)).toEqual(['a', 'b', 'c']);
  });
});

describe('shouldFailOver', () => {
  const reset = new EtcdConnectionError('Connection', 'reset', {});
  const refused = new EtcdConnectionError('Connection', 'refused', { notSent: true });
  const timeout = new EtcdConnectionError('Timeout', 'slow', {});
  const noLeader = new EtcdServerError(14, 'etcdserver: no leader');
  const learner = new EtcdServerError(9, 'etcdserver: rpc not supported for learner');
  const notFound = new EtcdServerError(5, 'etcdserver: member not found');

  it('reads move on after anything another member may not have', () => {
    for (const e of [
      reset,
      refused,
      timeout,
      noLeader,
      learner,
      new EtcdProtocolError('502', { retry: true }),
    ])
      expect(shouldFailOver(e, true)).toBe(true);
  });

  it('reads stop at final answers and at the caller’s abort', () => {
    for (const e of [notFound, new EtcdProtocolError('bad'), new EtcdAbortedError('stop'), new Error('x')])
      expect(shouldFailOver(e, true)).toBe(false);
  });

  it('writes move on only when the request surely never left', () => {
    expect(shouldFailOver(refused, false)).toBe(true);
    for (const e of [reset, timeout, noLeader, notFound]) expect(shouldFailOver(e, false)).toBe(false);
  });
});
