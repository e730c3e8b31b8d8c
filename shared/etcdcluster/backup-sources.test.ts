import { describe, expect, it } from 'vitest';
import { memberIdFromHex, memberIdToHex } from '../etcd/ids.ts';
import type { EndpointStatus } from '../etcd/types.ts';
import { type EtcdSourceCandidate, etcdBackupSources, noEtcdSourceReason } from './backup-sources.ts';

const status = (o: Partial<EndpointStatus> & { memberId: string }): EndpointStatus => ({
  endpoint: `http://${o.memberId}:2379`,
  header: { clusterId: '1', memberId: o.memberId, revision: 10, raftTerm: o.raftTerm ?? 2 },
  version: '3.6.16',
  storageVersion: '3.6.0',
  dbSize: 100,
  dbSizeInUse: 100,
  dbSizeQuota: undefined,
  leader: 'L',
  raftIndex: 50,
  raftTerm: 2,
  raftAppliedIndex: 50,
  isLearner: false,
  errors: [],
  ...o,
});

const member = (
  name: string,
  s: Partial<EndpointStatus> | undefined,
  deleting = false,
): EtcdSourceCandidate => ({
  member: name,
  pod: `main-etcd-${name}`,
  endpoint: `http://${name}:2379`,
  deleting,
  status: s ? status({ memberId: name, ...s }) : undefined,
});

/** The cluster's recorded id (hex), as the answers in `status` carry it. */
const OWN = memberIdToHex('1');
const FOREIGN = memberIdFromHex('4c5f00000000beef');

const names = (list: readonly { member: string }[]) => list.map((c) => c.member);

describe('where an etcd snapshot comes from', () => {
  it('prefers followers, the most applied first, and takes the leader last', () => {
    const list = [
      member('L', {}),
      member('a', { raftAppliedIndex: 40 }),
      member('b', { raftAppliedIndex: 49 }),
    ];
    expect(names(etcdBackupSources(list, 'prefer-replica', OWN))).toEqual(['b', 'a', 'L']);
    expect(names(etcdBackupSources(list, 'master', OWN))).toEqual(['L']);
  });

  it('never a learner, a member on its way out, one that did not answer, or one with a CORRUPT alarm', () => {
    const list = [
      member('L', {}),
      member('learner', { isLearner: true, raftAppliedIndex: 99 }),
      member('going', { raftAppliedIndex: 99 }, true),
      member('silent', undefined),
      member('corrupt', { raftAppliedIndex: 99, errors: ['memberID:5 alarm:CORRUPT'] }),
      member('ok', { raftAppliedIndex: 10 }),
    ];
    expect(names(etcdBackupSources(list, 'prefer-replica', OWN))).toEqual(['ok', 'L']);
  });

  it('never a member cut off with an older leader, however far it had applied', () => {
    // The old leader O and a follower still on term 1 claim O; the others moved on to L in term 2.
    const list = [
      member('O', { leader: 'O', raftTerm: 1, raftAppliedIndex: 90 }),
      member('x', { leader: 'O', raftTerm: 1, raftAppliedIndex: 95 }),
      member('L', { raftAppliedIndex: 60 }),
      member('y', { raftAppliedIndex: 55 }),
    ];
    expect(names(etcdBackupSources(list, 'prefer-replica', OWN))).toEqual(['y', 'L']);
    expect(names(etcdBackupSources(list, 'master', OWN))).toEqual(['L']);
  });

  it('has none when no member knows a leader, and says why', () => {
    const list = [member('a', { leader: undefined }), member('b', { leader: undefined })];
    expect(etcdBackupSources(list, 'prefer-replica', OWN)).toEqual([]);
    expect(noEtcdSourceReason(list, OWN)).toMatch(/no leader/);
    expect(noEtcdSourceReason([member('a', undefined)], OWN)).toMatch(/none of its members answers/);
    expect(noEtcdSourceReason([], OWN)).toMatch(/no member pods/);
  });

  it('never a member of another etcd cluster (an answer with another cluster id), however it ranks', () => {
    const foreign = (name: string, o: Partial<EndpointStatus>): EtcdSourceCandidate => {
      const c = member(name, o);
      return {
        ...c,
        status: c.status && { ...c.status, header: { ...c.status.header, clusterId: FOREIGN } },
      };
    };
    // Another cluster's member, furthest applied, following a leader of its own in a later term.
    const list = [
      member('L', {}),
      member('a', { raftAppliedIndex: 40 }),
      foreign('f', { leader: 'F', raftTerm: 9, raftAppliedIndex: 99 }),
      foreign('F', { leader: 'F', raftTerm: 9 }),
    ];
    expect(names(etcdBackupSources(list, 'prefer-replica', OWN))).toEqual(['a', 'L']);
    expect(names(etcdBackupSources(list, 'master', OWN))).toEqual(['L']);
    // Before a cluster id is recorded, any answer may be the cluster's (the other answer).
    expect(names(etcdBackupSources(list, 'master', undefined))).toEqual(['F']);
    expect(noEtcdSourceReason([foreign('f', {})], OWN)).toMatch(/another etcd cluster/);
  });
});
