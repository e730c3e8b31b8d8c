import { cp, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BasePins, baseKeyOf } from './base.ts';
import { imageParts, keyOf } from './key.ts';

// A checkout in miniature: every kind of file the key reads, and files it must not read.
const FILES: Record<string, string> = {
  Containerfile: 'FROM base\n',
  '.containerignore': '*\n',
  'package.json': '{"type":"module"}\n',
  'package-lock.json': '{"packages":{}}\n',
  'serverless.yml': 'service: tideway\n',
  'shared/runtime/worker.ts': 'export const w = 1;\n',
  'shared/runtime/worker.test.ts': 'test\n',
  'functions/reconcile/index.ts': 'export const handler = 1;\n',
  'functions/webhook/openapi.json': '{}\n',
  'scripts/image/base.ts': 'recipe\n',
  'scripts/image/base.test.ts': 'recipe test\n',
  'scripts/node24.sh': 'NODE_VERSION=24.21.0\n',
  'README.md': 'readme\n',
  'test/e2e.test.ts': 'e2e\n',
  'infra/install.ts': 'infra\n',
};

const PINS: BasePins = {
  node: { version: '24.21.0', arch: 'x64', integrity: 'sha512-aaa' },
  debs: [
    {
      name: 'libc6',
      version: '2.36-9+deb12u14',
      architecture: 'amd64',
      filename: 'libc6.deb',
      sha256: 'a'.repeat(64),
    },
  ],
  osRelease: 'ID=debian\n',
};

describe('the image cache key', () => {
  let top = '';
  let n = 0;
  const checkout = async () => {
    const root = join(top, String(n++));
    for (const [path, text] of Object.entries(FILES)) {
      await mkdir(dirname(join(root, path)), { recursive: true });
      await writeFile(join(root, path), text);
    }
    return root;
  };
  const keyOfCheckout = (root: string, pins = PINS) => keyOf(imageParts(root, baseKeyOf(root, pins)));
  let reference = '';

  beforeAll(async () => {
    top = await mkdtemp(join(tmpdir(), 'tideway-image-key-'));
    reference = keyOfCheckout(await checkout());
  });
  afterAll(() => rm(top, { recursive: true, force: true }));

  it('is the same for the same inputs, wherever the checkout is', async () => {
    const a = await checkout();
    expect(keyOfCheckout(a)).toBe(reference);
    expect(keyOfCheckout(a)).toBe(reference);
    const moved = join(top, 'elsewhere');
    await cp(a, moved, { recursive: true });
    expect(keyOfCheckout(moved)).toBe(reference);
  });

  it.each([
    'Containerfile',
    '.containerignore',
    'package.json',
    'package-lock.json',
    'serverless.yml',
    'shared/runtime/worker.ts',
    'functions/reconcile/index.ts',
    'functions/webhook/openapi.json',
    'scripts/image/base.ts',
  ])('changes when %s changes', async (path) => {
    const root = await checkout();
    await writeFile(join(root, path), `${FILES[path]}changed\n`);
    expect(keyOfCheckout(root)).not.toBe(reference);
  });

  it.each([
    'shared/runtime/worker.test.ts',
    'scripts/image/base.test.ts',
    'README.md',
    'test/e2e.test.ts',
    'infra/install.ts',
  ])('stays when %s changes (it does not go into the image)', async (path) => {
    const root = await checkout();
    await writeFile(join(root, path), 'changed\n');
    expect(keyOfCheckout(root)).toBe(reference);
  });

  it('changes when a file is added to or renamed in the code trees, not when a test is added', async () => {
    const added = await checkout();
    await writeFile(join(added, 'shared', 'runtime', 'new.ts'), 'export {};\n');
    expect(keyOfCheckout(added)).not.toBe(reference);

    const renamed = await checkout();
    await rename(join(renamed, 'shared/runtime/worker.ts'), join(renamed, 'shared/runtime/worker2.ts'));
    expect(keyOfCheckout(renamed)).not.toBe(reference);

    const test = await checkout();
    await writeFile(join(test, 'functions', 'reconcile', 'more.test.ts'), 'test\n');
    expect(keyOfCheckout(test)).toBe(reference);
  });

  it('changes with every pin of the base: a Debian package, the Node build', async () => {
    const root = await checkout();
    const deb = PINS.debs[0]!;
    const variants: BasePins[] = [
      { ...PINS, debs: [{ ...deb, version: '2.36-9+deb12u15' }] },
      { ...PINS, debs: [{ ...deb, sha256: 'b'.repeat(64) }] },
      { ...PINS, debs: [...PINS.debs, { ...deb, name: 'libstdc++6' }] },
      { ...PINS, node: { ...PINS.node, version: '24.22.0' } },
      { ...PINS, node: { ...PINS.node, integrity: 'sha512-bbb' } },
      { ...PINS, osRelease: 'ID=debian\nVERSION_ID="13"\n' },
    ];
    const keys = variants.map((p) => keyOfCheckout(root, p));
    expect(new Set([reference, ...keys]).size).toBe(variants.length + 1);
  });

  it('does not depend on the order of its parts, and refuses a part named twice', () => {
    expect(
      keyOf([
        ['a', '1'],
        ['b', '2'],
      ]),
    ).toBe(
      keyOf([
        ['b', '2'],
        ['a', '1'],
      ]),
    );
    expect(
      keyOf([
        ['a', '1'],
        ['b', '2'],
      ]),
    ).not.toBe(
      keyOf([
        ['a', '2'],
        ['b', '1'],
      ]),
    );
    expect(() =>
      keyOf([
        ['a', '1'],
        ['a', '2'],
      ]),
    ).toThrow(/a given twice/);
  });
});
