import type { RestoreStatus } from '../../shared/api/generated.ts';
import type { Command } from '../args.ts';
import { EXIT } from '../errors.ts';
import { follow } from '../follow.ts';
import type { TidewayApi } from '../kube.ts';
import { renderRestoreOutcome } from '../render.ts';
import type { Io } from './io.ts';

const TERMINAL: ReadonlySet<string> = new Set(['Completed', 'Failed', 'RolledBack']);

/** A Restore object for the cluster; followed through Verifying, SafetyBackup, Restoring. */
export const restore = async (c: Extract<Command, { cmd: 'restore' }>, api: TidewayApi, io: Io) => {
  const ns = c.namespace ?? api.defaultNamespace;
  await api.getCluster(ns, c.cluster);
  if ('backup' in c.source) await api.getBackup(ns, c.source.backup.name);
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
    terminal: TERMINAL,
    out: c.output === 'json' ? undefined : io.stderr,
  });
  io.stdout.write(
    `${c.output === 'json' ? JSON.stringify({ name, ...s }, null, 2) : renderRestoreOutcome(name, s)}\n`,
  );
  return s.phase === 'Completed' ? EXIT.ok : EXIT.failed;
};
