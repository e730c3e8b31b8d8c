import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { TestbedInfo } from './types.ts';

/** Single-quoted for sh: values are paths, URLs and generated secrets. */
const quote = (v: string) => `'${v.replaceAll("'", `'\\''`)}'`;

/** The variables of `.tideway/local/env` (see API.md, Commands). */
export const envVars = (bed: TestbedInfo, extra: Record<string, string> = {}): Record<string, string> => ({
  KUBECONFIG: bed.kubeconfig,
  NATS_URL: bed.natsUrl,
  S3_ENDPOINT: bed.s3.endpoint,
  S3_REGION: bed.s3.region,
  S3_BUCKET: bed.s3.bucket,
  S3_ACCESS_KEY_ID: bed.s3.accessKeyId,
  S3_SECRET_ACCESS_KEY: bed.s3.secretAccessKey,
  REDIS_URL: bed.redisUrl,
  TIDEWAY_TESTBED_CONTROL_URL: bed.controlUrl,
  TIDEWAY_TESTBED_CONTROL_TOKEN: bed.controlToken,
  ...extra,
});

export const writeEnvFile = async (file: string, vars: Record<string, string>, pathPrefix: string) => {
  await mkdir(dirname(file), { recursive: true });
  const lines = Object.entries(vars).map(([k, v]) => `export ${k}=${quote(v)}`);
  lines.push(`export PATH=${quote(pathPrefix)}:"$PATH"`);
  // Secrets inside: readable by the owner only. Written aside and renamed into place, because
  // whoever waits for the file (a script, the lifecycle test) reads it the moment it appears.
  const partial = `${file}.partial`;
  await writeFile(partial, `${lines.join('\n')}\n`, { mode: 0o600 });
  await rename(partial, file);
};

export const removeEnvFile = (file: string) => rm(file, { force: true });
