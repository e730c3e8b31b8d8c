import { describe, expect, it } from 'vitest';
import { containerEnv, DEFAULT_PATH, serviceEnv } from './env.ts';

describe('containerEnv', () => {
  it("starts from the image's Env, adds HOSTNAME and a missing PATH and HOME, then the pod's entries win", () => {
    expect(
      containerEnv({
        image: ['PATH=/usr/local/bin:/usr/bin', 'HOME=/tmp', 'NODE_ENV=production', 'EQ=a=b', 'NOVALUE'],
        hostname: 'pod-0',
        home: '/home/u',
        pod: { NODE_ENV: 'test', FROM_POD: 'x' },
      }),
    ).toEqual({
      PATH: '/usr/local/bin:/usr/bin',
      HOME: '/tmp', // the image's, not the passwd entry's
      NODE_ENV: 'test',
      EQ: 'a=b',
      HOSTNAME: 'pod-0',
      FROM_POD: 'x',
    });
    expect(containerEnv({ image: [], hostname: 'h', home: '/home/u', pod: { HOSTNAME: 'mine' } })).toEqual({
      PATH: DEFAULT_PATH,
      HOME: '/home/u',
      HOSTNAME: 'mine',
    });
  });
});

describe('serviceEnv', () => {
  it("gives kubelet's Docker-link variables for Services with a cluster IP", () => {
    expect(
      serviceEnv([
        {
          metadata: { name: 'kubernetes' },
          spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
        },
        {
          metadata: { name: 'my-db' },
          spec: {
            clusterIP: '10.96.0.9',
            ports: [{ port: 6379 }, { name: 'metrics', port: 9121, protocol: 'TCP' }],
          },
        },
        { metadata: { name: 'headless' }, spec: { clusterIP: 'None', ports: [{ port: 1 }] } },
      ]),
    ).toEqual({
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      KUBERNETES_SERVICE_PORT_HTTPS: '443',
      KUBERNETES_PORT: 'tcp://10.96.0.1:443',
      KUBERNETES_PORT_443_TCP: 'tcp://10.96.0.1:443',
      KUBERNETES_PORT_443_TCP_PROTO: 'tcp',
      KUBERNETES_PORT_443_TCP_PORT: '443',
      KUBERNETES_PORT_443_TCP_ADDR: '10.96.0.1',
      MY_DB_SERVICE_HOST: '10.96.0.9',
      MY_DB_SERVICE_PORT: '6379',
      MY_DB_SERVICE_PORT_METRICS: '9121',
      MY_DB_PORT: 'tcp://10.96.0.9:6379',
      MY_DB_PORT_6379_TCP: 'tcp://10.96.0.9:6379',
      MY_DB_PORT_6379_TCP_PROTO: 'tcp',
      MY_DB_PORT_6379_TCP_PORT: '6379',
      MY_DB_PORT_6379_TCP_ADDR: '10.96.0.9',
      MY_DB_PORT_9121_TCP: 'tcp://10.96.0.9:9121',
      MY_DB_PORT_9121_TCP_PROTO: 'tcp',
      MY_DB_PORT_9121_TCP_PORT: '9121',
      MY_DB_PORT_9121_TCP_ADDR: '10.96.0.9',
    });
  });
});
