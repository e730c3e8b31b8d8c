import type { V1PodSecurityContext, V1SecurityContext } from '@kubernetes/client-node';
import { ContainerConfigError } from './env.ts';

export type PasswdEntry = {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
};
export type GroupEntry = { readonly name: string; readonly gid: number; readonly members: readonly string[] };

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));

/** /etc/passwd: `name:x:uid:gid:gecos:home:shell`; malformed lines are skipped, as libc does. */
export const parsePasswd = (text: string): PasswdEntry[] =>
  lines(text).flatMap((l) => {
    const [name, , uid, gid, , home] = l.split(':');
    if (!name || !/^\d+$/.test(uid ?? '') || !/^\d+$/.test(gid ?? '')) return [];
    return [{ name, uid: Number(uid), gid: Number(gid), home: home || '/' }];
  });

/** /etc/group: `name:x:gid:member,member`. */
export const parseGroup = (text: string): GroupEntry[] =>
  lines(text).flatMap((l) => {
    const [name, , gid, members] = l.split(':');
    if (!name || !/^\d+$/.test(gid ?? '')) return [];
    return [{ name, gid: Number(gid), members: (members ?? '').split(',').filter(Boolean) }];
  });

/** Who a container's process is. */
export type RunAs = {
  readonly uid: number;
  readonly gid: number;
  /** Supplementary groups (the image's memberships, supplementalGroups, fsGroup). */
  readonly groups: readonly number[];
  /** The user's home from the image's passwd, for HOME when neither image nor pod sets it. */
  readonly home: string;
};

export type UserInputs = {
  /** The image config's User: `user[:group]`, each a number or a name; empty is root. */
  readonly imageUser: string;
  readonly pod: V1PodSecurityContext | undefined;
  readonly container: V1SecurityContext | undefined;
  readonly passwd: readonly PasswdEntry[];
  readonly group: readonly GroupEntry[];
};

const numeric = (s: string) => /^\d+$/.test(s);

/**
 * The user a container runs as, as kubelet and containerd decide it: runAsUser/runAsGroup (the
 * container's over the pod's) win over the image's User; a name is looked up in the image's
 * /etc/passwd and /etc/group; without a group, the passwd entry's (else 0). runAsNonRoot refuses
 * uid 0, and a user name it cannot check without running the image, with kubelet's messages.
 */
export const resolveUser = (o: UserInputs): RunAs => {
  const runAsUser = o.container?.runAsUser ?? o.pod?.runAsUser;
  const runAsGroup = o.container?.runAsGroup ?? o.pod?.runAsGroup;
  const nonRoot = o.container?.runAsNonRoot ?? o.pod?.runAsNonRoot ?? false;
  const [userPart = '', groupPart] = o.imageUser.split(':');

  if (nonRoot) {
    if (runAsUser !== undefined) {
      if (runAsUser === 0) throw new ContainerConfigError("container's runAsUser breaks non-root policy");
    } else if (userPart !== '' && !numeric(userPart)) {
      throw new ContainerConfigError(
        `container has runAsNonRoot and image has non-numeric user (${userPart}), cannot verify user is non-root`,
      );
    } else if (userPart === '' || Number(userPart) === 0) {
      throw new ContainerConfigError('container has runAsNonRoot and image will run as root');
    }
  }

  let entry: PasswdEntry | undefined;
  let uid: number;
  if (runAsUser !== undefined) {
    uid = runAsUser;
    entry = o.passwd.find((p) => p.uid === uid);
  } else if (userPart === '' || numeric(userPart)) {
    uid = userPart === '' ? 0 : Number(userPart);
    entry = o.passwd.find((p) => p.uid === uid);
  } else {
    entry = o.passwd.find((p) => p.name === userPart);
    if (!entry)
      throw new ContainerConfigError(`unable to find user ${userPart}: no matching entries in passwd file`);
    uid = entry.uid;
  }

  let gid: number;
  if (runAsGroup !== undefined) gid = runAsGroup;
  else if (runAsUser === undefined && groupPart !== undefined && groupPart !== '') {
    if (numeric(groupPart)) gid = Number(groupPart);
    else {
      const g = o.group.find((x) => x.name === groupPart);
      if (!g)
        throw new ContainerConfigError(
          `unable to find group ${groupPart}: no matching entries in group file`,
        );
      gid = g.gid;
    }
  } else gid = entry?.gid ?? 0;

  const member = entry ? o.group.filter((g) => g.members.includes(entry.name)).map((g) => g.gid) : [];
  const extra = [
    ...(o.pod?.supplementalGroups ?? []),
    ...(o.pod?.fsGroup !== undefined ? [o.pod.fsGroup] : []),
  ];
  const groups = [...new Set([...member, ...extra])].filter((g) => g !== gid);
  return { uid, gid, groups, home: entry?.home ?? '/' };
};
