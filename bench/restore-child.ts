import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import type { Resolved } from '../functions/restore/source.ts';
import { holdLast } from '../functions/restore/stream.ts';
import { readSource, verifySource } from '../functions/restore/verify.ts';
import type { Compression } from '../shared/backup/compression.ts';
import type { LoadMode } from '../shared/restore/load.ts';
import { loadRdb } from '../shared/restore/load.ts';
import { storeFromEnv } from './child-store.ts';

// One restore through the restore function's data path (verify pass, then the load by
// replication from a second read of the object; with --single-pass, the header only, then the load) in a process of its own, with the function's
// Node flags: its garbage collector works on its own heap, not on the benchmark's. Prints JSON.
const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    password: { type: 'string' },
    key: { type: 'string' },
    sha256: { type: 'string' },
    size: { type: 'string' },
    'rdb-size': { type: 'string' },
    compression: { type: 'string', default: 'zstd' },
    mode: { type: 'string', default: 'disk' },
    // verifyFirst: false — the header now, the rest while it streams.
    'single-pass': { type: 'boolean', default: false },
  },
});
const store = storeFromEnv();
const compression = values.compression as Compression;
const rdbSize = Number(values['rdb-size']);
const resolved: Resolved = {
  source: {
    describe: 'bench',
    key: values.key ?? '',
    sha256: values.sha256 ?? '',
    size: Number(values.size),
    rdbSize,
    compression,
    redis: { product: 'redis', version: '7.0' },
  },
  store: { store, prefix: '', compression },
};
const rssBeforeKiB = Math.round(process.memoryUsage.rss() / 1024);
const started = performance.now();
const singlePass = values['single-pass'];
await verifySource(resolved, singlePass ? { headOnly: true } : {});
const verifyMs = performance.now() - started;
const loaded = await loadRdb({
  target: { host: values.host, port: Number(values.port), password: values.password ?? '' },
  feedHost: '127.0.0.1',
  targetPeer: '127.0.0.1',
  mode: values.mode as LoadMode,
  // As the restore function reads it: its end held back until the checksum matched.
  open: async () => ({
    rdb: Readable.from(holdLast(readSource(resolved), async () => undefined, rdbSize)),
    ...(values.mode === 'disk' ? { size: rdbSize } : {}),
  }),
});
const ms = performance.now() - started;
process.stdout.write(
  `${JSON.stringify({ ms, verifyMs, keys: loaded.keys, rssBeforeKiB, maxRssKiB: process.resourceUsage().maxRSS })}\n`,
);
