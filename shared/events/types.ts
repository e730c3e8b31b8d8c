/** CloudEvent types Tideway publishes. `as const` objects, not enums: plain values on the wire. */
export const EventType = {
  added: 'dev.tideway.resource.added',
  updated: 'dev.tideway.resource.updated',
  deleted: 'dev.tideway.resource.deleted',
  synced: 'dev.tideway.resource.synced',
  scheduleTick: 'dev.tideway.tick.schedule',
  /** A look at a schedule's retention between its runs: no run (its own type, so it never stands in for a tick). */
  retentionTick: 'dev.tideway.tick.retention',
  healthTick: 'dev.tideway.tick.health',
  /**
   * Health's look at the Restore a cluster's Restoring condition names (at most one a
   * RESTORE_LOOK_MS): a run of it, so one the runtime gave up on mid-load is ended, its load
   * settled, without waiting for a change of its own (status changes are no events).
   */
  restoreTick: 'dev.tideway.tick.restore',
  backupCompleted: 'dev.tideway.backup.completed',
  backupFailed: 'dev.tideway.backup.failed',
  restoreCompleted: 'dev.tideway.restore.completed',
  restoreFailed: 'dev.tideway.restore.failed',
  clusterFailover: 'dev.tideway.cluster.failover',
  /** Health noticed what reconcile must act on and no watch reports (a new password). */
  clusterReconcile: 'dev.tideway.cluster.reconcile',
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

export const TYPE_PREFIX = 'dev.tideway.';

/** The object an event is about; every Tideway event has one (ticks and outcomes included). */
export type ObjectRef = { kind: string; namespace: string; name: string };

/** Extension attributes (CloudEvents extension names are lowercase alphanumerics). */
export type ResourceExtensions = {
  kind: string;
  namespace: string;
  name: string;
  uid?: string;
  generation?: string;
  resourceversion?: string;
  traceparent?: string;
};
