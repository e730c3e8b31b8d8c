import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheDir } from '../../infra/testbed/paths.ts';
import { ETCD_IMAGES } from '../../shared/etcdcluster/names.ts';
import { restoredOf } from '../../shared/etcdcluster/restore/progress.ts';

const run = promisify(execFile);

/**
 * A cluster made from a backup replaces its first member's pod when the restore steps ran again on
 * a volume they had restored (restoredOf): it recognises etcdutl's refusal by its words. Checked
 * here against the real etcdutl of every version the images carry, so a reworded message fails
 * this test instead of leaving a member stuck.
 */
describe('etcdutl refusing a data dir that holds a member', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-etcdutl-'));
    await mkdir(join(dir, 'data', 'member', 'snap'), { recursive: true });
    await writeFile(join(dir, 'snapshot.db'), 'not read: the data dir is checked first');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  for (const image of Object.values(ETCD_IMAGES)) {
    const version = image.split(':v')[1] ?? '';
    it(`is known as "restored before" (etcdutl ${version})`, async () => {
      const etcdutl = join(cacheDir(), 'images', `etcd-v${version}`, 'etcdutl');
      const said = await run(etcdutl, [
        'snapshot',
        'restore',
        join(dir, 'snapshot.db'),
        `--data-dir=${join(dir, 'data')}`,
        '--name=m-0',
        '--initial-cluster=m-0=http://127.0.0.1:2380',
        '--initial-advertise-peer-urls=http://127.0.0.1:2380',
      ]).then(
        () => 'it succeeded',
        (e: { stderr?: string; code?: number }) => `${e.stderr ?? ''}`,
      );
      const pod: V1Pod = {
        status: {
          initContainerStatuses: [
            {
              name: 'restore-snapshot',
              image: image,
              imageID: '',
              ready: false,
              restartCount: 1,
              lastState: {
                terminated: { exitCode: 1, message: said.trim().split('\n').slice(-5).join('\n') },
              },
            },
          ],
        },
      };
      expect(restoredOf(pod), said).toBe('restoredBefore');
    });
  }
});
