import { parseArgs } from 'node:util';
import type { Compression } from '../shared/backup/compression.ts';
import { storeSnapshot } from '../shared/backup/pipeline.ts';
import { openSnapshot } from '../shared/redis/snapshot.ts';
import { partSizes } from '../shared/s3/part-size.ts';
import { storeFromEnv } from './child-store.ts';

// One backup through the product's data path (shared/redis/snapshot + shared/backup/pipeline +
// shared/s3) in a process of its own, so its peak RSS is the data path's alone. With --function,
// the backup function's other modules are loaded first (its handler, the Kubernetes client, the
// bus), as in the function's own process. Prints JSON.
const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    key: { type: 'string' },
    compression: { type: 'string', default: 'zstd' },
    encrypt: { type: 'boolean', default: false },
    function: { type: 'boolean', default: false },
  },
});
if (values.function)
  await Promise.all([
    import('../functions/backup/index.ts'),
    import('@kubernetes/client-node'),
    import('../shared/bus/connect.ts'),
    import('../shared/bus/publisher.ts'),
    import('../shared/runtime/metrics.ts'),
    import('../shared/runtime/ops-server.ts'),
  ]);
const store = storeFromEnv();
// What the process holds before any byte flows: code (the runtime, the client), no data.
const rssBeforeKiB = Math.round(process.memoryUsage.rss() / 1024);
const started = performance.now();
const snap = await openSnapshot({ host: values.host, port: Number(values.port) });
const stored = await storeSnapshot({
  rdb: snap.rdb,
  store,
  key: values.key ?? 'bench.rdb',
  compression: values.compression as Compression,
  encryptionKey: values.encrypt ? Buffer.alloc(32, 7) : undefined,
  partSize: partSizes(snap.header.size),
});
const ms = performance.now() - started;
process.stdout.write(
  `${JSON.stringify({ ms, rdbSize: stored.rdbSize, size: stored.size, parts: stored.parts, rssBeforeKiB, maxRssKiB: process.resourceUsage().maxRSS })}\n`,
);
