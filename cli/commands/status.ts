import type { Command } from '../args.ts';
import type { TidewayApi } from '../kube.ts';
import { renderCluster } from '../render.ts';
import type { Io } from './io.ts';

export const status = async (c: Extract<Command, { cmd: 'status' }>, api: TidewayApi, io: Io) => {
  const rc = await api.getCluster(c.namespace ?? api.defaultNamespace, c.cluster);
  io.stdout.write(`${c.output === 'json' ? JSON.stringify(rc.status ?? {}, null, 2) : renderCluster(rc)}\n`);
  return 0;
};
