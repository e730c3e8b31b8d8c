import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { selectImageFiles } from './inputs.ts';

/** One input of a cache key: a name and what it is (a digest or a pinned version). */
export type KeyPart = readonly [name: string, value: string];

export const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

/** A key over named inputs: the same inputs in any order give the same key; any change, another. */
export const keyOf = (parts: readonly KeyPart[]): string => {
  const sorted = [...parts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i]?.[0] === sorted[i - 1]?.[0]) throw new Error(`key part ${sorted[i]?.[0]} given twice`);
  return sha256(JSON.stringify(sorted));
};

const fileParts = (root: string, prefix: string, paths: readonly string[]): KeyPart[] =>
  paths.map((p) => [`${prefix}${p}`, sha256(readFileSync(join(root, p)))]);

/** The recipe: how the image is made (this folder, tests aside). A change to it rebuilds. */
export const recipeParts = (root: string): KeyPart[] =>
  fileParts(
    root,
    'recipe:',
    readdirSync(join(root, 'scripts', 'image'))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .sort()
      .map((f) => `scripts/image/${f}`),
  );

/**
 * Everything the image is made of besides its base: the Containerfile and .containerignore, the
 * lock and package.json (production node_modules follow from them) and every file that goes in.
 */
export const imageParts = (root: string, baseKey: string): KeyPart[] => [
  ['base', baseKey],
  ...fileParts(root, '', ['Containerfile', '.containerignore', 'package-lock.json']),
  ...fileParts(root, 'app:', selectImageFiles(root)),
];
