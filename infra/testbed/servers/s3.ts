import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { bin } from '../paths.ts';
import { type Component, component } from '../process/component.ts';
import { startProcess, waitReady } from '../process/managed-process.ts';
import { canConnect, freePort } from '../process/ports.ts';

export type S3Server = {
  readonly endpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly server: Component;
};

/**
 * versitygw, a maintained S3 gateway, over a directory (a bucket is a directory). Credentials
 * are random per run; the region is the SDK's usual default. It listens on `host`, the pod
 * bridge's address, so that a backup running in a pod reaches the same endpoint.
 */
export const startS3 = async (o: { dir: string; testbedId: string; host: string }): Promise<S3Server> => {
  const dir = join(o.dir, 's3');
  await mkdir(join(dir, 'data'), { recursive: true });
  const port = await freePort(o.host);
  const accessKeyId = `tw${randomBytes(8).toString('hex')}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  const region = 'us-east-1';
  const server = component('s3', async () => {
    const proc = startProcess({
      name: 's3',
      command: bin('versitygw'),
      args: ['--port', `${o.host}:${port}`, '--region', region, 'posix', join(dir, 'data')],
      // Root credentials through the environment: never on a command line (ps would show them).
      env: { ROOT_ACCESS_KEY: accessKeyId, ROOT_SECRET_KEY: secretAccessKey },
      logFile: join(dir, 's3.log'),
      testbedId: o.testbedId,
    });
    await waitReady(proc, () => canConnect(o.host, port));
    return proc;
  });
  await server.start();
  return { endpoint: `http://${o.host}:${port}`, region, accessKeyId, secretAccessKey, server };
};
