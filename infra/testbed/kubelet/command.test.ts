import { describe, expect, it } from 'vitest';
import { defaultImageTable } from '../image-table/index.ts';
import { expand, resolveArgv } from './command.ts';

const tideway = { entrypoint: ['node', '/app/shared/runtime/worker.ts'], cmd: [] };
const withCmd = { entrypoint: ['docker-entrypoint.sh'], cmd: ['redis-server'] };
const redis = (() => {
  const e = defaultImageTable('/cache')['redis:7.0'];
  if (!e?.entrypoint) throw new Error('redis:7.0 has no entrypoint in the table');
  return { entrypoint: e.entrypoint, cmd: e.config.cmd };
})();

describe('command resolution', () => {
  it('expands $(VAR), keeps unknown references, unescapes $$', () => {
    expect(expand('--requirepass $(PW) $(NOPE) $$(PW)', { PW: 's3cret' })).toBe(
      '--requirepass s3cret $(NOPE) $(PW)',
    );
  });

  it("follows kubelet's rule: command replaces ENTRYPOINT and drops CMD, args replace CMD", () => {
    expect(resolveArgv(withCmd, undefined, undefined, {})).toEqual(['docker-entrypoint.sh', 'redis-server']);
    expect(resolveArgv(withCmd, undefined, ['valkey-server', '--port', '1'], {})).toEqual([
      'docker-entrypoint.sh',
      'valkey-server',
      '--port',
      '1',
    ]);
    expect(resolveArgv(withCmd, ['sh'], undefined, {})).toEqual(['sh']); // CMD is not appended
    expect(resolveArgv(withCmd, ['sh'], ['-c', 'x'], {})).toEqual(['sh', '-c', 'x']);
    expect(resolveArgv(withCmd, [], [], {})).toEqual(['docker-entrypoint.sh', 'redis-server']); // empty = unset
    expect(resolveArgv(tideway, undefined, ['health'], {})).toEqual([
      'node',
      '/app/shared/runtime/worker.ts',
      'health',
    ]);
    expect(resolveArgv(tideway, undefined, undefined, {})).toEqual(['node', '/app/shared/runtime/worker.ts']);
    expect(resolveArgv({ entrypoint: [], cmd: [] }, undefined, undefined, {})).toEqual([]);
  });

  it("expands the pod's command and args with the pod's variables, never the image's own", () => {
    const image = { entrypoint: ['run', '$(A)'], cmd: ['$(A)'] };
    expect(resolveArgv(image, undefined, undefined, { A: 'x' })).toEqual(['run', '$(A)', '$(A)']);
    expect(resolveArgv(image, undefined, ['$(A)'], { A: 'x' })).toEqual(['run', '$(A)', 'x']);
    expect(resolveArgv(image, ['$(A)'], ['$(A)'], { A: 'x' })).toEqual(['x', 'x']);
  });

  it("runs a table image's entrypoint script on CMD or args, and skips it for a pod's command", () => {
    expect(resolveArgv(redis, undefined, undefined, {})).toEqual(['redis-server', '--protected-mode', 'no']);
    expect(resolveArgv(redis, undefined, ['--port', '1'], {})).toEqual([
      'redis-server',
      '--port',
      '1',
      '--protected-mode',
      'no',
    ]);
    expect(resolveArgv(redis, undefined, ['/etc/redis.conf'], {})).toEqual([
      'redis-server',
      '/etc/redis.conf',
    ]);
    expect(resolveArgv(redis, undefined, ['redis-server', '--appendonly', 'yes'], {})).toEqual([
      'redis-server',
      '--appendonly',
      'yes',
      '--protected-mode',
      'no',
    ]);
    expect(resolveArgv(redis, undefined, ['sh', '-c', 'x'], {})).toEqual(['sh', '-c', 'x']);
    expect(resolveArgv(redis, ['redis-server'], [], {})).toEqual(['redis-server']);
  });
});
