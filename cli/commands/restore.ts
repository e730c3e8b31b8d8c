import type { RestoreStatus } from '../../shared/api/generated.ts';
import { clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import { pickLatest } from '../../shared/backup/latest.ts';
import { describeRunning, FINISHED, givenUp, isActive } from '../../shared/restore/ended.ts';
import type { Command } from '../args.ts';
import { CliError, EXIT } from '../errors.ts';
import { follow } from '../follow.ts';
import type { TidewayApi } from '../kube.ts';
import { renderRestoreOutcome } from '../render.ts';
import type { Io } from './io.ts';

type RestoreCommand = Extract<Command, { cmd: 'restore' }>;

/**
 * What the restore function would refuse, refused here before anything is created: a cluster
 * that is missing or going away, a source that is not a Completed Backup (for --latest: none
 * that counts, by the function's own rule), another Restore of the cluster not finished. The
 * function checks again under its lock; this only spares a user a Restore that fails at once.
 */
const refuse = async (c: RestoreCommand, api: TidewayApi, ns: string) => {
  const cluster = await api.getCluster(ns, c.cluster);
  const rdc = `RedisCluster "${c.cluster}" in namespace "${ns}"`;
  if (cluster.metadata.deletionTimestamp) throw new CliError(`${rdc} is being deleted`);
  if ('backup' in c.source) {
    const name = c.source.backup.name;
    const backup = await api.getBackup(ns, name);
    const of = clusterRefOf(backup.spec);
    if (of.kind !== 'RedisCluster')
      throw new CliError(
        `Backup "${name}" in namespace "${ns}" is a backup of ${of.kind} "${of.name}": a restore loads RedisCluster backups only (an EtcdCluster is made from one with spec.bootstrap.fromBackup)`,
      );
    const phase = backup.status?.phase;
    if (phase !== 'Completed')
      throw new CliError(
        `Backup "${name}" in namespace "${ns}" is ${phase ?? 'Pending'}: only a Completed Backup can be restored${phase === 'Failed' ? '' : '; restore it once it has completed'}`,
      );
  } else if (!pickLatest(await api.listBackups(ns), { kind: 'RedisCluster', name: c.cluster }))
    throw new CliError(
      `${rdc} has no Completed Backup for --latest (safety backups of restores do not count: restore one with --backup NAME)`,
    );
  // The function's and the webhook's rule (shared/restore/ended.ts).
  const running = (await api.listRestores(ns)).filter(
    (r) => r.spec.cluster.name === c.cluster && isActive(r),
  );
  if (running.length > 0)
    throw new CliError(
      `a Restore of ${rdc} is not finished: ${running.map(describeRunning).join(', ')}; restore again once it has ended`,
    );
};

/** A Restore object for the cluster; followed through Verifying, SafetyBackup, Restoring. */
export const restore = async (c: RestoreCommand, api: TidewayApi, io: Io) => {
  const ns = c.namespace ?? api.defaultNamespace;
  await refuse(c, api, ns);
  const { name } = await api.create('Restore', ns, {
    metadata: c.name ? { name: c.name } : { generateName: `${c.cluster}-restore-`.slice(0, 58) },
    spec: { cluster: { name: c.cluster }, source: c.source, safetyBackup: c.safetyBackup },
  });
  if (!c.wait) {
    io.stdout.write(
      c.output === 'json'
        ? `${JSON.stringify({ namespace: ns, name })}\n`
        : `Restore ${ns}/${name} created\n`,
    );
    return EXIT.ok;
  }
  if (c.output === 'text')
    io.stderr.write(
      `Restore ${ns}/${name} created; following it (Ctrl-C stops following, not the restore)\n`,
    );
  const s: RestoreStatus = await follow({
    read: async () => (await api.getRestore(ns, name)).status,
    terminal: FINISHED,
    // Given up on by the runtime: nothing moves it on until a run of its own ends it.
    stopped: (status) => givenUp({ status }) !== undefined,
    out: c.output === 'json' ? undefined : io.stderr,
  });
  io.stdout.write(
    `${c.output === 'json' ? JSON.stringify({ namespace: ns, name, ...s }, null, 2) : renderRestoreOutcome(name, s)}\n`,
  );
  return s.phase === 'Completed' ? EXIT.ok : EXIT.failed;
};
