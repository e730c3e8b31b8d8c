import { readFileSync } from 'node:fs';
import { parseCommand, USAGE } from './args.ts';
import { backupNow } from './commands/backup-now.ts';
import { completionScript } from './commands/completion.ts';
import type { Io } from './commands/io.ts';
import { restore } from './commands/restore.ts';
import { status } from './commands/status.ts';
import { CliError, EXIT } from './errors.ts';
import { kubeApi, loadKubeConfig } from './kube.ts';

/** Runs one command line; resolves with the exit code. Errors become one line on stderr. */
export const run = async (argv: readonly string[], io: Io): Promise<number> => {
  try {
    const c = parseCommand(argv);
    switch (c.cmd) {
      case 'help':
        io.stdout.write(`${USAGE}\n`);
        return EXIT.ok;
      case 'version': {
        const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
          version: string;
        };
        io.stdout.write(`tideway ${pkg.version}\n`);
        return EXIT.ok;
      }
      case 'completion':
        io.stdout.write(completionScript(c.shell));
        return EXIT.ok;
      default: {
        const api = kubeApi(loadKubeConfig());
        if (c.cmd === 'status') return await status(c, api, io);
        if (c.cmd === 'backup-now') return await backupNow(c, api, io);
        return await restore(c, api, io);
      }
    }
  } catch (e) {
    if (e instanceof CliError) {
      io.stderr.write(`tideway: ${e.message}\n`);
      return e.exitCode;
    }
    io.stderr.write(`tideway: unexpected error: ${(e as Error)?.stack ?? String(e)}\n`);
    return EXIT.failed;
  }
};

if (import.meta.main) {
  process.on('SIGINT', () => {
    process.stderr.write('\ntideway: stopped following; the object goes on (kubectl get tideway -w)\n');
    process.exit(130);
  });
  process.exitCode = await run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr });
}
