import { describe, expect, it } from 'vitest';
import { expand, resolveArgv } from './command.ts';

const image = { programs: { 'redis-server': '/x/redis-server' }, defaultCommand: ['redis-server'] };

describe('command resolution', () => {
  it('expands $(VAR), keeps unknown references, unescapes $$', () => {
    expect(expand('--requirepass $(PW) $(NOPE) $$(PW)', { PW: 's3cret' })).toBe(
      '--requirepass s3cret $(NOPE) $(PW)',
    );
  });

  it('follows Docker semantics for command and args', () => {
    expect(resolveArgv(image, undefined, undefined, {})).toEqual(['redis-server']);
    expect(resolveArgv(image, ['redis-server'], ['--port', '1'], {})).toEqual([
      'redis-server',
      '--port',
      '1',
    ]);
    expect(resolveArgv(image, undefined, ['--port', '1'], {})).toEqual(['redis-server', '--port', '1']);
    expect(resolveArgv(image, undefined, ['sh', '-c', 'x'], {})).toEqual(['sh', '-c', 'x']);
  });

  it("applies the image's entrypoint only when the pod does not override command", () => {
    const withEntrypoint = {
      ...image,
      entrypoint: (argv: readonly string[]) => [...argv, '--protected-mode', 'no'],
    };
    expect(resolveArgv(withEntrypoint, undefined, ['--port', '1'], {})).toEqual([
      'redis-server',
      '--port',
      '1',
      '--protected-mode',
      'no',
    ]);
    expect(resolveArgv(withEntrypoint, ['redis-server'], [], {})).toEqual(['redis-server']);
  });
});
