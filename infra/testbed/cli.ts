import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { envVars, removeEnvFile, writeEnvFile } from './env-file.ts';
import { startTestbed } from './testbed.ts';

/**
 * Runs the test bed in the foreground until Ctrl-C or SIGTERM, with `.tideway/local/env` written
 * once it is ready and removed at stop. `npm start` adds Tideway's functions on top.
 */
export const runTestbedForeground = async (opts: {
  root: string;
  onReady?: (bed: Awaited<ReturnType<typeof startTestbed>>) => Promise<Record<string, string>>;
  /** Runs first at stop (before the test bed goes): stop what onReady started. */
  onStop?: () => Promise<void>;
}) => {
  const log = (msg: string) => process.stderr.write(`${msg}\n`);
  const envFile = join(opts.root, '.tideway', 'local', 'env');
  const bed = await startTestbed({ log });
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`[tideway] ${signal}: stopping`);
    await removeEnvFile(envFile);
    await opts.onStop?.().catch((error: unknown) => log(`[tideway] stop: ${String(error)}`));
    await bed.stop();
    log('[tideway] stopped; nothing left behind');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  try {
    const extra = (await opts.onReady?.(bed)) ?? {};
    await writeEnvFile(envFile, envVars(bed, extra), dirname(bed.kubectl));
  } catch (error) {
    log(`[tideway] start failed: ${error instanceof Error ? error.message : String(error)}`);
    await shutdown('error');
    process.exitCode = 1;
    return;
  }
  log(`[tideway] ready. In another shell: source ${envFile} && kubectl get nodes`);
};

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await runTestbedForeground({ root: resolve(dirname(fileURLToPath(import.meta.url)), '..', '..') });
}
