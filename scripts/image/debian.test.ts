import { describe, expect, it } from 'vitest';
import { osReleaseOf } from './base.ts';
import { parseAptShow } from './debian.ts';

const stanza = (name: string, version: string) =>
  [
    `Package: ${name}`,
    'Source: glibc',
    `Version: ${version}`,
    'Architecture: amd64',
    'Description: GNU C Library: Shared libraries',
    ' Contains the standard libraries that are used by nearly all programs on',
    ` Filename: pool/main/g/glibc/${name}_${version}_amd64.deb`,
    `Filename: pool/main/g/glibc/${name}_${version}_amd64.deb`,
    `SHA256: ${'c'.repeat(64)}`,
  ].join('\n');

describe('Debian package candidates', () => {
  it('reads each stanza of apt-cache show, continuation lines ignored', () => {
    expect(
      parseAptShow(`${stanza('libc6', '2.36-9+deb12u14')}\n\n${stanza('libgcc-s1', '12.2.0-14')}\n\n`),
    ).toEqual([
      {
        name: 'libc6',
        version: '2.36-9+deb12u14',
        architecture: 'amd64',
        filename: 'pool/main/g/glibc/libc6_2.36-9+deb12u14_amd64.deb',
        sha256: 'c'.repeat(64),
      },
      {
        name: 'libgcc-s1',
        version: '12.2.0-14',
        architecture: 'amd64',
        filename: 'pool/main/g/glibc/libgcc-s1_12.2.0-14_amd64.deb',
        sha256: 'c'.repeat(64),
      },
    ]);
  });

  it('refuses a stanza without a checksum rather than download unchecked', () => {
    expect(() => parseAptShow(stanza('libc6', '1').replace(/^SHA256.*$/m, ''))).toThrow(/SHA256/);
  });

  it("names the base after Debian's release its libraries come from", () => {
    const host =
      'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\nID=debian\n';
    expect(osReleaseOf(host, '24.21.0')).toBe(
      [
        'PRETTY_NAME="Tideway base: Node 24.21.0 on the C libraries of debian 12 (bookworm)"',
        'NAME="Tideway base"',
        'ID=debian',
        'VERSION_ID="12"',
        'VERSION_CODENAME=bookworm',
        '',
      ].join('\n'),
    );
  });
});
