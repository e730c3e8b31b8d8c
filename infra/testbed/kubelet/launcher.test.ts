import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launcherScript } from './launcher.ts';

const root = await mkdtemp(join(tmpdir(), 'tideway-launcher-'));

const script = (hostPath: string, containerPath: string) =>
  launcherScript({
    root: join(root, 'r'),
    tmp: join(root, 't'),
    mounts: [{ hostPath, containerPath, readOnly: true }],
    workingDir: '/',
    argv: ['true'],
    env: {},
    log: join(root, 'log'),
  });

describe('launcherScript', () => {
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('binds a volume directory on a directory, so changes inside it reach the container', async () => {
    await mkdir(join(root, 'vol'));
    const s = script(join(root, 'vol'), '/etc/tw');
    expect(s).toContain(`mkdir -p "$R"'/etc/tw'\nmount --bind '${join(root, 'vol')}' "$R"'/etc/tw'`);
    expect(s).toContain(`mount -o remount,bind,ro "$R"'/etc/tw'`);
  });

  it('follows the `..data` symlinks of a subPath: a directory on a directory, a file on a file', async () => {
    await mkdir(join(root, 'api', '..2020_01_01_00_00_00.x', 'sub'), { recursive: true });
    await writeFile(join(root, 'api', '..2020_01_01_00_00_00.x', 'key'), 'v');
    await symlink('..2020_01_01_00_00_00.x', join(root, 'api', '..data'));
    await symlink('..data/sub', join(root, 'api', 'sub'));
    await symlink('..data/key', join(root, 'api', 'key'));
    expect(script(join(root, 'api', 'sub'), '/etc/sub')).toContain(`mkdir -p "$R"'/etc/sub'\nmount --bind`);
    expect(script(join(root, 'api', 'key'), '/etc/key.conf')).toContain(
      `touch "$R"'/etc/key.conf'\nmount --bind`,
    );
  });

  it("binds the pod's /etc/hosts and resolv.conf over the machine's, which it never touches", async () => {
    // Outside /tmp, which the pod root does not take from the machine.
    const etc = await mkdtemp('/var/tmp/tideway-launcher-');
    try {
      const podFiles = (containerPath: string) =>
        launcherScript({
          root: join(root, 'r'),
          tmp: join(root, 't'),
          mounts: [],
          podFiles: [{ hostPath: join(root, 'pod-file'), containerPath }],
          workingDir: '/',
          argv: ['true'],
          env: {},
          log: join(root, 'log'),
        });
      // A plain file: one bind over it, in the rbind of the machine's directory.
      await writeFile(join(etc, 'plain'), 'machine\n');
      const plain = podFiles(join(etc, 'plain'));
      expect(plain).toContain(`mount --rbind '/var' "$R"'/var'`);
      expect(plain).toContain(`\nmount --bind '${join(root, 'pod-file')}' "$R"'${join(etc, 'plain')}'\n`);
      expect(plain).not.toContain(`touch "$R"'${join(etc, 'plain')}'`);
      // A symlink (systemd-resolved's resolv.conf): a bind would follow it, so its directory is
      // expanded, the link left out and a file of the pod root bound instead.
      await symlink('../run/elsewhere', join(etc, 'linked'));
      const linked = podFiles(join(etc, 'linked'));
      expect(linked).toContain(`mkdir -p "$R"'${etc}'\n`);
      expect(linked).toContain(`mount --bind '${join(etc, 'plain')}' "$R"'${join(etc, 'plain')}'`);
      expect(linked).not.toContain('elsewhere');
      expect(linked).toContain(
        `touch "$R"'${join(etc, 'linked')}'\nmount --bind '${join(root, 'pod-file')}' "$R"'${join(etc, 'linked')}'`,
      );
    } finally {
      await rm(etc, { recursive: true, force: true });
    }
  });
});
