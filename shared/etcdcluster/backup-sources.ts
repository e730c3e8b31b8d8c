import type { EndpointStatus } from '../etcd/types.ts';
import { leaderOf, sameCluster } from './observe.ts';

/** A member a snapshot may be taken from: its pod and what it answered. */
export type EtcdSourceCandidate = {
  readonly member: string;
  readonly pod: string;
  readonly endpoint: string | undefined;
  readonly deleting: boolean;
  /** Its status answer; undefined when it did not answer. */
  readonly status: EndpointStatus | undefined;
};

export type EtcdSource = EtcdSourceCandidate & { readonly endpoint: string; readonly status: EndpointStatus };

/**
 * Where to take an etcd snapshot from, in the order to try them. Only a voting member that follows
 * the current leader (the highest term's claim, in that very term) qualifies: a learner, a member
 * cut off with an older leader, one with a CORRUPT alarm or on its way out would back up stale or
 * damaged data. `prefer-replica`: followers, most applied first, so the leader's disk and network
 * are spared; the leader last. `master`: the leader only. An answer with another cluster's id
 * (`clusterId`: the cluster's recorded id, hex) is no answer: that is another cluster's data.
 */
export const etcdBackupSources = (
  candidates: readonly EtcdSourceCandidate[],
  preference: 'prefer-replica' | 'master',
  clusterId: string | undefined,
): EtcdSource[] => {
  const answered = ownAnswers(candidates, clusterId).filter(
    (c): c is EtcdSource => !!c.endpoint && !c.deleting,
  );
  const leader = leaderOf(answered.map((c) => c.status));
  if (leader === undefined) return [];
  const term = Math.max(0, ...answered.map((c) => c.status.raftTerm));
  const fit = answered.filter(
    (c) =>
      !c.status.isLearner &&
      c.status.leader === leader &&
      c.status.raftTerm === term &&
      !c.status.errors.some((e) => /CORRUPT/i.test(e)),
  );
  const own = fit.find((c) => c.status.memberId === leader);
  if (preference === 'master') return own ? [own] : [];
  const followers = fit
    .filter((c) => c !== own)
    .sort((a, b) => b.status.raftAppliedIndex - a.status.raftAppliedIndex);
  return [...followers, ...(own ? [own] : [])];
};

/** The candidates that answered as members of the cluster with that id. */
const ownAnswers = (candidates: readonly EtcdSourceCandidate[], clusterId: string | undefined) =>
  candidates.filter(
    (c): c is EtcdSourceCandidate & { status: EndpointStatus } =>
      !!c.status && sameCluster(clusterId, c.status.header.clusterId),
  );

/** Why no member qualifies, in words for the status. */
export const noEtcdSourceReason = (
  candidates: readonly EtcdSourceCandidate[],
  clusterId: string | undefined,
): string => {
  if (candidates.length === 0) return 'it has no member pods';
  const answering = ownAnswers(candidates, clusterId);
  if (answering.length === 0)
    return candidates.some((c) => c.status)
      ? 'its member pods answer as another etcd cluster (another cluster id)'
      : 'none of its members answers';
  if (!answering.some((c) => c.status?.leader)) return 'its members know no leader (quorum lost?)';
  return 'no voting member follows the current leader';
};
