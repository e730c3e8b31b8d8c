/**
 * The first member's restore step, an init container of Tideway's image:
 * `node /app/shared/etcdcluster/restore/main.js` (the image holds it as JavaScript). It fetches the backup named in
 * TIDEWAY_RESTORE_SOURCE (a RestoreSource as JSON) into TIDEWAY_RESTORE_OUT, checked (./fetch.ts);
 * the next init container, etcd's own image, runs `etcdutl snapshot restore` on it. A failure is
 * written to the termination log as `<Reason>: <message>` (what etcd-reconcile shows on the
 * cluster) and exits 1; no secret value is ever in it.
 */
import { writeFile } from 'node:fs/promises';
import { fetchSnapshot, mountedSecrets, restoreStepOf, sourceStore } from './fetch.ts';
import { zRestoreSource } from './source.ts';

const TERMINATION_LOG = '/dev/termination-log';

const fail = async (reason: string, message: string): Promise<never> => {
  const line = `${reason}: ${message}`.slice(0, 4000);
  process.stderr.write(`${line}\n`);
  await writeFile(TERMINATION_LOG, line).catch(() => undefined);
  process.exit(1);
};

const main = async () => {
  const out = process.env.TIDEWAY_RESTORE_OUT ?? '/restore/snapshot.db';
  let raw: unknown;
  try {
    raw = JSON.parse(process.env.TIDEWAY_RESTORE_SOURCE ?? '');
  } catch {
    return fail('InvalidSource', 'TIDEWAY_RESTORE_SOURCE is not JSON');
  }
  const source = zRestoreSource.safeParse(raw);
  if (!source.success)
    return fail(
      'InvalidSource',
      source.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  const dataDir = process.env.TIDEWAY_RESTORE_DATA_DIR;
  switch (await restoreStepOf(out, dataDir)) {
    case 'interrupted':
      return fail(
        'InterruptedRestore',
        `${dataDir}/member holds a restore that was cut short (a database without its WAL): delete this member's volume and pod to restore again`,
      );
    case 'restored':
      process.stdout.write(`${dataDir} holds the member's data already: nothing to fetch\n`);
      return;
    case 'fetched':
      process.stdout.write(`${out} is there already\n`);
      return;
    case 'fetch':
      break;
  }
  const started = performance.now();
  const resolved = await sourceStore(
    source.data,
    process.env.TIDEWAY_NAMESPACE ?? '',
    mountedSecrets(process.env.TIDEWAY_SECRETS_DIR ?? '/etc/tideway/secrets'),
  );
  const { dbSize } = await fetchSnapshot({ source: source.data, resolved, out });
  process.stdout.write(
    `backup ${source.data.backup}: ${dbSize} bytes of snapshot verified into ${out} in ${((performance.now() - started) / 1000).toFixed(1)}s\n`,
  );
};

await main().catch((error: { reason?: unknown; message?: unknown }) =>
  fail(typeof error?.reason === 'string' ? error.reason : 'FetchFailed', String(error?.message ?? error)),
);
