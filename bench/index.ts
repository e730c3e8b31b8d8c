import { parseArgs } from 'node:util';
import { startTestbed } from '../infra/testbed/testbed.ts';
import { benchEventPath } from './event-path.ts';
import { benchRedis } from './redis.ts';

// npm run bench [-- --quick] [-- --only event-path|relist|redis]: starts its own test bed, runs
// the benchmarks, prints the results.
const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } },
});
const bed = await startTestbed({ log: (m) => process.stderr.write(`${m}\n`) });
const results: string[] = [];
const want = (name: string) => !values.only || values.only === name;
try {
  if (values.only === 'relist')
    results.push(...(await benchEventPath(bed, { rates: [], seconds: 0, objects: 0, relist: 10_000 })));
  if (want('event-path'))
    results.push(
      ...(await benchEventPath(
        bed,
        values.quick
          ? { rates: [100], seconds: 5, objects: 50, relist: 1000 }
          : { rates: [200, 1000], seconds: 10, objects: 200, relist: 10_000 },
      )),
    );
  if (want('redis'))
    results.push(
      ...(await benchRedis(bed, values.quick ? { clusters: 3, rounds: 2 } : { clusters: 20, rounds: 5 })),
    );
} finally {
  await bed.stop();
}
process.stdout.write(`\n${results.join('\n')}\n`);
