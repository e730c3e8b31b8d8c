import { readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * What of the checkout goes into the image, in one place: the key, the generated
 * .containerignore and the archive check all read it. The functions' and runtime's code (made
 * JavaScript on the way in: compile.ts), serverless.yml (the function table) and package.json
 * ("type": "module"); node_modules comes from the lock, production packages only.
 */
export const IMAGE_FILES = ['package.json', 'serverless.yml'] as const;
export const IMAGE_TREES = ['shared', 'functions'] as const;
/**
 * Left out of the trees: tests and the fixtures only they import (the image runs code, it does
 * not check it); a unit test keeps every import of what goes in inside the image.
 */
const TEST_FILE = /(\.test|(^|\/)fixture)\.ts$/;

const toPosix = (p: string) => p.split(sep).join('/');

const walk = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [],
  );

/** The checkout's files that go into /app (besides node_modules), relative and sorted. */
export const selectImageFiles = (root: string): string[] =>
  [...IMAGE_FILES, ...IMAGE_TREES.flatMap((t) => walk(join(root, t)).map((f) => toPosix(relative(root, f))))]
    .filter((f) => !TEST_FILE.test(f))
    .sort();

/**
 * The .containerignore for a build context laid out like the checkout (the checkout itself,
 * or the one `npm run image` stages): only what the Containerfile copies, no tests. Written at
 * the root; a unit test keeps the file equal to this.
 */
export const containerignore = (): string =>
  [
    '# Generated from scripts/image/inputs.ts (a unit test keeps them equal). The build context',
    '# holds only what the Containerfile copies; tests stay out.',
    '*',
    ...['node_modules', ...IMAGE_FILES, ...IMAGE_TREES].map((p) => `!${p}`),
    ...IMAGE_TREES.flatMap((t) => [`${t}/**/*.test.ts`, `${t}/**/fixture.ts`]),
    '',
  ].join('\n');
