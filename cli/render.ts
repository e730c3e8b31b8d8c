import type { BackupStatus, RedisCluster, RestoreStatus } from '../shared/api/generated.ts';
import { givenUp } from '../shared/restore/ended.ts';
import { formatBytes } from './format.ts';

type Condition = NonNullable<NonNullable<RedisCluster['status']>['conditions']>[number];

const table = (rows: readonly (readonly string[])[]): string[] => {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
};

/** The text `tideway status` prints for a cluster. */
export const renderCluster = (rc: RedisCluster): string => {
  const s = rc.status ?? {};
  const desired = rc.spec.replicas ?? s.replicas;
  const lines = [
    `Cluster:     ${rc.metadata.namespace ?? ''}/${rc.metadata.name ?? ''}`,
    `Phase:       ${s.phase ?? 'Unknown (no status yet)'}`,
    `Master:      ${s.master ?? '-'}`,
    `Ready:       ${s.readyReplicas ?? 0}/${desired ?? '?'}`,
    `Version:     ${s.version ?? '-'}${rc.spec.version && s.version !== undefined && !s.version.startsWith(rc.spec.version) ? ` (spec: ${rc.spec.version})` : ''}`,
    `Last backup: ${s.lastBackup?.name ? `${s.lastBackup.name} at ${s.lastBackup.completedAt ?? '?'}` : 'none'}`,
  ];
  const conditions: readonly Condition[] = s.conditions ?? [];
  if (conditions.length > 0)
    lines.push(
      'Conditions:',
      ...table([
        ['TYPE', 'STATUS', 'REASON', 'MESSAGE'],
        ...conditions.map((c) => [c.type, c.status, c.reason, c.message ?? '']),
      ]).map((l) => `  ${l}`),
    );
  return lines.join('\n');
};

/** The last line of a followed Backup: where it went, how big, how long — or why not. */
export const renderBackupOutcome = (name: string, s: BackupStatus): string =>
  s.phase === 'Completed'
    ? [
        `Backup ${name} Completed`,
        `  location: ${s.location ?? '?'}`,
        `  size:     ${s.size === undefined ? '?' : formatBytes(s.size)}${s.rdbSize === undefined ? '' : ` (${formatBytes(s.rdbSize)} before compression)`}`,
        `  duration: ${s.duration ?? '?'}`,
      ].join('\n')
    : `Backup ${name} ${s.phase ?? 'ended'}: ${s.error?.reason ?? 'Unknown'}: ${s.error?.message ?? '(no message)'}`;

/** The last line of a followed Restore. */
export const renderRestoreOutcome = (name: string, s: RestoreStatus): string => {
  if (s.phase === 'Completed')
    return [
      `Restore ${name} Completed`,
      `  source:   ${s.source ?? '?'}`,
      ...(s.keys === undefined ? [] : [`  keys:     ${s.keys}`]),
      ...(s.safetyBackup ? [`  safety backup: ${s.safetyBackup}`] : []),
    ].join('\n');
  const given = givenUp({ status: s });
  if (given) return `Restore ${name} ${s.phase ?? 'Pending'}, given up on: ${given.reason}: ${given.message}`;
  const why = `${s.error?.reason ?? 'Unknown'}: ${s.error?.message ?? '(no message)'}`;
  return s.phase === 'RolledBack'
    ? `Restore ${name} RolledBack (the cluster holds its data from before, from ${s.safetyBackup ?? 'the safety backup'}): ${why}`
    : `Restore ${name} ${s.phase ?? 'ended'}: ${why}`;
};
