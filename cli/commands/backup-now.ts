import type { BackupStatus } from '../../shared/api/generated.ts';
import type { Command } from '../args.ts';
import { EXIT } from '../errors.ts';
import { follow } from '../follow.ts';
import type { TidewayApi } from '../kube.ts';
import { renderBackupOutcome } from '../render.ts';
import type { Io } from './io.ts';

const TERMINAL: ReadonlySet<string> = new Set(['Completed', 'Failed']);

/** A Backup object for the cluster, as kubectl or the webhook would make it; followed to its end. */
export const backupNow = async (c: Extract<Command, { cmd: 'backup-now' }>, api: TidewayApi, io: Io) => {
  const ns = c.namespace ?? api.defaultNamespace;
  // The cluster first: "not found" is clearer from here than a Backup that fails later.
  await api.getCluster(ns, c.cluster);
  const { name } = await api.create('Backup', ns, {
    metadata: c.name ? { name: c.name } : { generateName: `${c.cluster}-`.slice(0, 58) },
    spec: { cluster: { name: c.cluster } },
  });
  if (!c.wait) {
    io.stdout.write(
      c.output === 'json' ? `${JSON.stringify({ namespace: ns, name })}\n` : `Backup ${ns}/${name} created\n`,
    );
    return EXIT.ok;
  }
  if (c.output === 'text')
    io.stderr.write(`Backup ${ns}/${name} created; following it (Ctrl-C stops following, not the backup)\n`);
  const s: BackupStatus = await follow({
    read: async () => (await api.getBackup(ns, name)).status,
    terminal: TERMINAL,
    out: c.output === 'json' ? undefined : io.stderr,
  });
  io.stdout.write(
    `${c.output === 'json' ? JSON.stringify({ namespace: ns, name, ...s }, null, 2) : renderBackupOutcome(name, s)}\n`,
  );
  return s.phase === 'Completed' ? EXIT.ok : EXIT.failed;
};
