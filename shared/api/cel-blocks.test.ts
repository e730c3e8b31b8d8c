import { describe, expect, it } from 'vitest';
import { CelBlockError, fillCelBlocks } from './cel-blocks.ts';

const crd = (body: string) =>
  [
    'spec:',
    '  config:',
    '    type: object',
    '    # generated:config from x.ts; do not edit',
    body,
    '    # end generated:config',
    '  other: {}',
    '',
  ].join('\n');

describe('fillCelBlocks', () => {
  const blocks = { config: [{ rule: "self.all(k, k != 'port')", message: 'no port: Tideway sets it' }] };

  it('writes the rules between the markers, at their indentation, and nothing else', () => {
    const filled = fillCelBlocks(crd('    x-kubernetes-validations: []'), blocks);
    expect(filled).toBe(
      crd(
        [
          '    x-kubernetes-validations:',
          "      - rule: self.all(k, k != 'port')",
          '        message: "no port: Tideway sets it"',
        ].join('\n'),
      ),
    );
    // Filling is a fixed point: what the drift test relies on.
    expect(fillCelBlocks(filled, blocks)).toBe(filled);
  });

  it('refuses a marker without rules, rules without a marker, and a marker without its end', () => {
    expect(() => fillCelBlocks(crd(''), {})).toThrow(CelBlockError);
    expect(() => fillCelBlocks('spec: {}\n', blocks)).toThrow(/lacks the generated block\(s\) config/);
    expect(() => fillCelBlocks('  # generated:config x\n', blocks)).toThrow(/no "# end generated:config"/);
  });

  it('writes a whole schema node (a struct kept once) at the markers’ indentation', () => {
    const node = { node: { type: 'object', required: ['s3'], properties: { s3: { type: 'string' } } } };
    const filled = fillCelBlocks(crd(''), { config: node });
    expect(filled).toBe(
      crd(
        [
          '    type: object',
          '    required:',
          '      - s3',
          '    properties:',
          '      s3:',
          '        type: string',
        ].join('\n'),
      ),
    );
    expect(fillCelBlocks(filled, { config: node })).toBe(filled);
  });
});
