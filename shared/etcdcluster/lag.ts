/**
 * Raft index lag: how far each member's raft index is behind the leader's. The members' status
 * answers are taken a few milliseconds apart, so under a write load a healthy follower shows a
 * small lag (and may even look ahead): only a lag above the threshold that lasts longer than the
 * grace period makes a member "lagging" (a slow disk, a saturated network, a member receiving a
 * snapshot).
 */

/** Raft entries behind the leader above which a voting member counts as lagging. */
export const LAG_THRESHOLD = 1000;
/** How long the lag must last before the Healthy condition says so. */
export const LAG_GRACE_MS = 30_000;

export type LagInput = {
  members: readonly { id: string; name: string; learner: boolean }[];
  /** Each answering member's raft index, by name. */
  raftIndex: ReadonlyMap<string, number>;
  /** The leader's member id, if one is known. */
  leader: string | undefined;
  /** laggingSince as status recorded it, by member name. */
  since: ReadonlyMap<string, string>;
  now: Date;
  threshold?: number;
  graceMs?: number;
};

export type MemberLag = {
  /** Behind the leader's raft index; undefined when the leader or the member did not answer. */
  lag: number | undefined;
  /** Since when a voting member has lagged above the threshold (ISO time). */
  laggingSince: string | undefined;
};

export type Lagging = { name: string; lag: number; since: string };

/**
 * Lag of each member against the leader's raft index — the leader's, not the highest index seen
 * (a member sampled a moment later looks ahead of the leader) nor the member answering the list.
 * A learner's lag is shown but never counts as lagging: it is catching up by design, and the
 * planner promotes it once etcd says it caught up. With no answer from the leader or the member
 * nothing new is known, and a recorded laggingSince is kept.
 */
export const lagOf = (i: LagInput): { members: Map<string, MemberLag>; lagging: Lagging[] } => {
  const threshold = i.threshold ?? LAG_THRESHOLD;
  const graceMs = i.graceMs ?? LAG_GRACE_MS;
  const leaderName = i.members.find((m) => m.id === i.leader)?.name;
  const top = leaderName === undefined ? undefined : i.raftIndex.get(leaderName);
  const members = new Map<string, MemberLag>();
  const lagging: Lagging[] = [];
  for (const m of i.members) {
    const own = i.raftIndex.get(m.name);
    const lag = top === undefined || own === undefined ? undefined : Math.max(0, top - own);
    const before = i.since.get(m.name);
    const laggingSince = m.learner
      ? undefined
      : lag === undefined
        ? before
        : lag > threshold
          ? (before ?? i.now.toISOString())
          : undefined;
    members.set(m.name, { lag, laggingSince });
    if (
      lag !== undefined &&
      laggingSince !== undefined &&
      i.now.getTime() - Date.parse(laggingSince) >= graceMs
    )
      lagging.push({ name: m.name, lag, since: laggingSince });
  }
  return { members, lagging };
};
