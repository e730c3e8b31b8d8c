import { parseArgs } from 'node:util';
import { acquireLock } from '../infra/testbed/lock.ts';
import { startTestbed } from '../infra/testbed/testbed.ts';
import { benchBackup } from './backup.ts';
import { benchChart } from './chart.ts';
import { benchDispatch } from './dispatch.ts';
import { benchEtcd } from './etcd.ts';
import { benchEventPath } from './event-path.ts';
import { benchRedis } from './redis.ts';
import { benchRestore } from './restore.ts';

// npm run bench [-- --quick] [-- --only event-path|dispatch|relist|redis|etcd|chart|restore|backup]: starts its own test
// bed, runs the benchmarks, prints the results.
const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } },
});
// The restore and backup benchmarks run their own servers: alone, they need no test bed (nor its memory).
const bed =
  values.only === 'restore' || values.only === 'backup'
    ? undefined
    : await startTestbed({ log: (m) => process.stderr.write(`${m}\n`) });
// Their servers carry the test bed's marker and prefix, so a test bed starting beside them would
// clear them as leftovers: hold the machine's test bed lock all the same (either fails fast).
const releaseLock = bed ? undefined : await acquireLock();
const testbed = () => {
  if (!bed) throw new Error('no test bed was started');
  return bed;
};
const results: string[] = [];
const want = (name: string) => !values.only || values.only === name;
try {
  if (values.only === 'relist')
    results.push(...(await benchEventPath(testbed(), { runs: [], seconds: 0, objects: 0, relist: 10_000 })));
  if (want('event-path'))
    results.push(
      ...(await benchEventPath(
        testbed(),
        values.quick
          ? { runs: [{ replicas: 1, rates: [100] }], seconds: 5, objects: 50, relist: 1000 }
          : {
              // 50/s is what the API server here sustains without queueing (1 vs 3 replicas is
              // compared there); from 200/s on, the API server's queue is most of the latency.
              runs: [
                { replicas: 1, rates: [50, 200, 1000] },
                { replicas: 3, rates: [50, 200] },
              ],
              seconds: 10,
              objects: 200,
              relist: 10_000,
            },
      )),
    );
  if (want('dispatch'))
    results.push(
      ...(await benchDispatch(testbed(), {
        rate: 200,
        seconds: values.quick ? 5 : 10,
        objects: 200,
        setups: [
          { replicas: 1, keepMs: 0 },
          { replicas: 1, keepMs: 10_000 },
          { replicas: 3, keepMs: 0 },
          { replicas: 3, keepMs: 10_000 },
        ],
      })),
    );
  if (want('redis'))
    results.push(
      ...(await benchRedis(
        testbed(),
        values.quick ? { clusters: 3, rounds: 2 } : { clusters: 20, rounds: 5 },
      )),
    );
  if (want('etcd')) results.push(...(await benchEtcd(testbed(), { rounds: values.quick ? 1 : 3 })));
  if (want('chart')) results.push(...(await benchChart(testbed(), { rounds: values.quick ? 1 : 3 })));
  if (want('restore'))
    results.push(
      ...(await benchRestore(
        values.quick
          ? { keys: 100_000, valueBytes: 1000, rounds: 1 }
          : { keys: 1_000_000, valueBytes: 1000, rounds: 3 },
      )),
    );
  if (want('backup'))
    results.push(
      ...(await benchBackup(
        values.quick
          ? { sizes: [{ label: '100 MiB', keys: 100_000 }], encrypted: false }
          : {
              sizes: [
                { label: '100 MiB', keys: 100_000 },
                { label: '1 GiB', keys: 1_000_000 },
              ],
              encrypted: true,
            },
      )),
    );
} finally {
  await bed?.stop();
  await releaseLock?.();
}
process.stdout.write(`\n${results.join('\n')}\n`);
