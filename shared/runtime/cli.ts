import { resolve } from 'node:path';
import { loadServerless } from './config.ts';
import { createLogger } from './logger.ts';
import { startFunctions } from './supervisor.ts';

/** `tideway run [function…]`: starts the functions of serverless.yml as separate processes. */
const [command, ...rest] = process.argv.slice(2);
if (command !== 'run') {
  process.stderr.write('usage: tideway run [function…]   (reads ./serverless.yml or $TIDEWAY_SERVERLESS)\n');
  process.exit(64);
}
const file = resolve(process.env.TIDEWAY_SERVERLESS ?? 'serverless.yml');
const log = createLogger({ component: 'tideway-run' });
const sup = startFunctions({ serverlessFile: file, config: await loadServerless(file), only: rest, log });
const shutdown = async () => {
  await sup.stop();
  process.exit(0);
};
process.on('SIGTERM', () => void shutdown());
process.on('SIGINT', () => void shutdown());
