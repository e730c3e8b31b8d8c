import { parseArgs } from 'node:util';
import { startTestbed } from '../infra/testbed/testbed.ts';
import { benchEventPath } from './event-path.ts';

// npm run bench [-- --quick]: starts its own test bed, runs every benchmark, prints the results.
const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const bed = await startTestbed({ log: (m) => process.stderr.write(`${m}\n`) });
let results: string[] = [];
try {
  results = await benchEventPath(
    bed,
    values.quick
      ? { rates: [100], seconds: 5, objects: 50, relist: 1000 }
      : { rates: [200, 1000], seconds: 10, objects: 200, relist: 10_000 },
  );
} finally {
  await bed.stop();
}
process.stdout.write(`\n${results.join('\n')}\n`);
