import { describe, expect, it } from 'vitest';
import { type OciLaunch, ociLauncherScript } from './oci-launcher.ts';

const launch = (o: Partial<OciLaunch> = {}): string[] =>
  ociLauncherScript({
    lower: '/cache/unpacked/abc/rootfs',
    dir: '/pods/u/containers/c',
    mounts: [
      { source: '/pods/u/volumes/data', target: '/run/data', kind: 'dir', readOnly: false },
      { source: '/pods/u/volumes/cfg', target: '/etc/cfg', kind: 'dir', readOnly: true },
      { source: '/pods/u/etc/hosts', target: '/etc/hosts', kind: 'file', readOnly: false },
    ],
    readOnlyRoot: true,
    workingDir: '/app',
    hostname: 'pod-0',
    user: { uid: 65532, gid: 65532, groups: [5, 7], home: '/' },
    noNewPrivs: true,
    argv: ['node', "it's"],
    env: { PATH: '/usr/bin', A: 'x y' },
    log: '/pods/u/c.log',
    ...o,
  }).split('\n');

describe('ociLauncherScript', () => {
  it('refuses to run outside a UTS namespace of its own (it sets the host name)', () => {
    const lines = launch();
    expect(lines.findIndex((l) => l.includes('/proc/self/ns/uts'))).toBeLessThan(
      lines.findIndex((l) => l.startsWith('hostname ')),
    );
    expect(lines).toContain("hostname 'pod-0'");
  });

  it("builds the root as an overlay on the image, mounts the pod's files, then makes it read-only, then runs", () => {
    const lines = launch();
    const at = (s: string) => lines.findIndex((l) => l.includes(s));
    expect(lines).toContain(
      'mount -t overlay overlay -o \'lowerdir=/cache/unpacked/abc/rootfs,upperdir=/pods/u/containers/c/upper,workdir=/pods/u/containers/c/work\' "$R"',
    );
    expect(lines).toContain(`mount --bind '/pods/u/volumes/cfg' "$R"'/etc/cfg'`);
    expect(lines).toContain(`mount -o remount,bind,ro "$R"'/etc/cfg'`);
    expect(lines).not.toContain(`mount -o remount,bind,ro "$R"'/run/data'`);
    expect(lines).toContain(`[ -e "$R"'/etc/hosts' ] || touch "$R"'/etc/hosts'`);
    expect(at('overlay')).toBeLessThan(at("'/run/data'"));
    const readOnlyRoot = lines.indexOf('mount -o remount,bind,ro "$R"');
    expect(at(`mkdir -p "$R"'/app'`)).toBeLessThan(readOnlyRoot);
    expect(at(`mount --bind '/pods/u/etc/hosts'`)).toBeLessThan(readOnlyRoot);
    expect(readOnlyRoot).toBe(lines.length - 3); // then only the exec (and the final newline)
    expect(lines[0]).toBe('set -eu');
    expect(lines).toContain(`exec >>'/pods/u/c.log' 2>&1`);
  });

  it("runs argv as the container's user and groups, in its root and working directory, with only its env", () => {
    const exec = launch().at(-2) ?? '';
    expect(exec).toBe(
      `exec /usr/bin/env -i 'PATH=/usr/bin' 'A=x y' /usr/bin/setpriv --no-new-privs --regid=65532 --groups=5,7 -- /usr/bin/nsenter --root="$R" --wd="$R"'/app' --setuid=65532 -- 'node' 'it'\\''s'`,
    );
    const root = launch({
      user: { uid: 0, gid: 0, groups: [], home: '/root' },
      noNewPrivs: false,
      readOnlyRoot: false,
    });
    expect(root.at(-2)).toContain('/usr/bin/setpriv --regid=0 --clear-groups -- /usr/bin/nsenter');
    expect(root.at(-2)).not.toContain('--setuid');
    expect(root).not.toContain('mount -o remount,bind,ro "$R"');
  });
});
