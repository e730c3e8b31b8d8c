import { stringify } from 'yaml';

/** One x-kubernetes-validations entry. */
export type CelRule = { rule: string; message: string; fieldPath?: string; optionalOldSelf?: boolean };

/** A whole schema node, written as its keys (a struct embedded in several CRDs, kept once). */
export type SchemaBlock = { readonly node: Readonly<Record<string, unknown>> };

/** Named blocks, written into one CRD file: rule lists, or whole schema nodes. */
export type CelBlocks = Readonly<Record<string, readonly CelRule[] | SchemaBlock>>;

const BEGIN = /^( *)# generated:([a-z][\w-]*) .*$/;
const end = (name: string) => `# end generated:${name}`;

export class CelBlockError extends Error {
  override readonly name = 'CelBlockError';
  readonly retry = false;
}

/**
 * A CRD's text with every generated block rewritten from `blocks`. A block is marked in the YAML
 * by `# generated:<name> …` and `# end generated:<name>` at the indentation of the schema node;
 * between them the generator writes that node's `x-kubernetes-validations` (a rule list), or
 * the whole node (a SchemaBlock). Rules defined in TypeScript (lists the functions check too) and
 * structs used in several CRDs so stay one source; hand-written rules live outside the blocks. Throws on a block the file marks but `blocks` lacks, or the other way round.
 */
export const fillCelBlocks = (text: string, blocks: CelBlocks): string => {
  const lines = text.split('\n');
  const out: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    out.push(line);
    const m = BEGIN.exec(line);
    if (!m) continue;
    const [, indent = '', name = ''] = m;
    const rules = blocks[name];
    if (!rules) throw new CelBlockError(`the CRD marks a generated block "${name}" that no rule set defines`);
    const close = lines.findIndex((l, j) => j > i && l === `${indent}${end(name)}`);
    if (close < 0) throw new CelBlockError(`generated block "${name}" has no "${end(name)}" line`);
    const node = 'node' in rules ? rules.node : { 'x-kubernetes-validations': rules };
    const body = stringify(node, { lineWidth: 0 }).trimEnd();
    out.push(...body.split('\n').map((l) => `${indent}${l}`), lines[close] as string);
    seen.add(name);
    i = close;
  }
  const missing = Object.keys(blocks).filter((b) => !seen.has(b));
  if (missing.length > 0)
    throw new CelBlockError(`the CRD lacks the generated block(s) ${missing.join(', ')}: add the markers`);
  return out.join('\n');
};
