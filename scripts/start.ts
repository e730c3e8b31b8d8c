import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTestbedForeground } from '../infra/testbed/cli.ts';

// npm start: the local stack plus the operator.
await runTestbedForeground({ root: resolve(dirname(fileURLToPath(import.meta.url)), '..') });
