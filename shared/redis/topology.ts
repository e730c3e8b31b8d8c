/** What the health probe learned about one instance. */
export type InstanceState = {
  pod: string;
  ordinal: number;
  reachable: boolean;
  role?: 'master' | 'replica';
  offset?: number;
  /** For replicas: the master they follow and whether the link is up. */
  masterHost?: string;
  linkUp?: boolean;
};

/**
 * The replica to promote: reachable, highest replication offset (it has every write any replica
 * acknowledged, so writes confirmed with WAIT 1 survive), ties to the lowest ordinal so the
 * choice is stable across replicas of the health function.
 */
export const chooseNewMaster = (
  instances: readonly InstanceState[],
  exclude: string,
): InstanceState | undefined =>
  instances
    .filter((i) => i.pod !== exclude && i.reachable)
    .sort((a, b) => (b.offset ?? -1) - (a.offset ?? -1) || a.ordinal - b.ordinal)[0];

/** Bytes a replica is behind its master (0 when unknown). */
export const lagBytes = (master: InstanceState | undefined, replica: InstanceState): number =>
  master?.offset !== undefined && replica.offset !== undefined
    ? Math.max(0, master.offset - replica.offset)
    : 0;
