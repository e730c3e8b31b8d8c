import { s3Store } from '../shared/s3/store.ts';

/**
 * The product's store on the bench's S3 server, as a benchmark's child process finds it in its
 * environment (BENCH_S3_*). Its own module: a child imports nothing else of the bench's.
 */
export const storeFromEnv = (env = process.env) =>
  s3Store({
    bucket: env.BENCH_S3_BUCKET ?? '',
    region: 'us-east-1',
    endpoint: env.BENCH_S3_ENDPOINT ?? '',
    forcePathStyle: true,
    credentials: {
      accessKeyId: env.BENCH_S3_ACCESS_KEY_ID ?? '',
      secretAccessKey: env.BENCH_S3_SECRET_ACCESS_KEY ?? '',
    },
    credentialsName: 'bench',
  });
