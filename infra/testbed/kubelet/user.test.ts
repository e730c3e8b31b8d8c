import { describe, expect, it } from 'vitest';
import { ContainerConfigError } from './env.ts';
import { parseGroup, parsePasswd, resolveUser, type UserInputs } from './user.ts';

const passwd = parsePasswd(
  'root:x:0:0:root:/root:/bin/sh\n# comment\nredis:x:999:998::/var/lib/redis:/usr/sbin/nologin\nbroken line\ntideway:x:65532:65532::/home/tideway:/sbin/nologin\n',
);
const group = parseGroup('root:x:0:\nredis:x:998:\nsockets:x:30:redis,other\ntideway:x:65532:\n');
const user = (o: Partial<UserInputs>) =>
  resolveUser({ imageUser: '', pod: undefined, container: undefined, passwd, group, ...o });

describe('resolveUser', () => {
  it("takes the image's User: numbers, names, uid:gid, and the passwd entry's group and home", () => {
    expect(user({ imageUser: '' })).toEqual({ uid: 0, gid: 0, groups: [], home: '/root' });
    expect(user({ imageUser: '65532:65532' })).toEqual({
      uid: 65532,
      gid: 65532,
      groups: [],
      home: '/home/tideway',
    });
    expect(user({ imageUser: '999' })).toEqual({ uid: 999, gid: 998, groups: [30], home: '/var/lib/redis' });
    expect(user({ imageUser: 'redis' })).toMatchObject({ uid: 999, gid: 998, groups: [30] });
    expect(user({ imageUser: 'redis:sockets' })).toMatchObject({ uid: 999, gid: 30, groups: [] });
    expect(user({ imageUser: '1234' })).toEqual({ uid: 1234, gid: 0, groups: [], home: '/' }); // not in passwd
    expect(user({ imageUser: '1234:77' })).toMatchObject({ uid: 1234, gid: 77 });
  });

  it("lets the container's securityContext win over the pod's, and both over the image", () => {
    expect(user({ imageUser: 'redis', pod: { runAsUser: 65532 } })).toMatchObject({ uid: 65532, gid: 65532 });
    expect(
      user({
        imageUser: '65532:65532',
        pod: { runAsUser: 1000, runAsGroup: 2000 },
        container: { runAsUser: 3000 },
      }),
    ).toMatchObject({ uid: 3000, gid: 2000 });
    // runAsUser replaces the image's user entirely, its group too (the group comes from passwd, else 0).
    expect(user({ imageUser: '65532:65532', container: { runAsUser: 1000 } })).toMatchObject({
      uid: 1000,
      gid: 0,
    });
    expect(user({ imageUser: '65532', pod: { supplementalGroups: [5, 6], fsGroup: 7 } })).toMatchObject({
      groups: [5, 6, 7],
    });
  });

  it("refuses what runAsNonRoot forbids, with kubelet's messages", () => {
    const refused = (o: Partial<UserInputs>) => {
      try {
        user(o);
      } catch (error) {
        expect(error).toBeInstanceOf(ContainerConfigError);
        return (error as Error).message;
      }
      return 'allowed';
    };
    expect(refused({ imageUser: '', pod: { runAsNonRoot: true } })).toBe(
      'container has runAsNonRoot and image will run as root',
    );
    expect(refused({ imageUser: '0:0', container: { runAsNonRoot: true } })).toBe(
      'container has runAsNonRoot and image will run as root',
    );
    expect(refused({ imageUser: 'redis', pod: { runAsNonRoot: true } })).toBe(
      'container has runAsNonRoot and image has non-numeric user (redis), cannot verify user is non-root',
    );
    expect(refused({ imageUser: '65532', pod: { runAsNonRoot: true }, container: { runAsUser: 0 } })).toBe(
      "container's runAsUser breaks non-root policy",
    );
    expect(refused({ imageUser: 'redis', pod: { runAsNonRoot: true, runAsUser: 999 } })).toBe('allowed');
    expect(refused({ imageUser: '', pod: { runAsNonRoot: true }, container: { runAsNonRoot: false } })).toBe(
      'allowed',
    );
    expect(refused({ imageUser: 'nobody' })).toBe(
      'unable to find user nobody: no matching entries in passwd file',
    );
    expect(refused({ imageUser: 'redis:nogroup' })).toBe(
      'unable to find group nogroup: no matching entries in group file',
    );
  });
});
