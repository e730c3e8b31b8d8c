import type { Instance } from './probe.ts';
import { passwordHash } from './probe.ts';

/** A cluster's passwords. None of them is ever logged or put in a status or an Event. */
export type Auth = {
  /** The user's Secret (or the generated one): what the password should be. */
  desired: string;
  /** Tideway's record (the auth-conf Secret): the password every instance accepts. */
  applied: string;
  /** The one before `applied`: a pod that restarts before its kubelet refreshed the password file accepts only that. */
  previous?: string;
};

/** The order to try passwords in: the recorded one, the wanted one, the one before. */
export const passwordsOf = (a: Auth) =>
  [...new Set([a.applied, a.desired, ...(a.previous === undefined ? [] : [a.previous])])] as const;

/** Commands for one instance; `args` hold a password: run them, never log them. */
export type AuthStep = { pod: string; ip: string; connectWith: string; args: string[][] };

export type AuthPlan = {
  steps: AuthStep[];
  /** What the record says once every step succeeded (the same as now when nothing moves). */
  record: { password: string; previous?: string };
  /** Why the record cannot move yet, for the Reconciled condition. */
  waiting?: string;
};

/**
 * A password change, rolled without a restart and without a moment in which an instance refuses
 * the password Tideway (or a replica's masterauth) uses: every instance first accepts the new
 * password as well and replicates with it; only when all of them do is it recorded (pods that
 * start later read it from their file); then each instance is made to accept it alone. Instances
 * that answer with an older password (restarted before their file was refreshed) are brought up
 * to date the same way. Needs `instances` probed with inspectAuth and passwordsOf(auth).
 */
export const planAuth = (auth: Auth, instances: readonly Instance[]): AuthPlan => {
  const tried = passwordsOf(auth);
  const rotating = auth.desired !== auth.applied;
  const target = rotating ? auth.desired : auth.applied;
  const hash = passwordHash(target);
  const steps: AuthStep[] = [];
  const unanswered: string[] = [];
  const noAcl: string[] = [];
  for (const i of instances) {
    if (!i.ip || i.password === undefined) {
      if (!i.terminating) unanswered.push(i.pod);
      continue;
    }
    if (!i.auth) {
      noAcl.push(i.pod);
      continue;
    }
    const args: string[][] = [];
    if (rotating ? !i.auth.accepts.includes(hash) : i.auth.accepts.length !== 1 || i.auth.accepts[0] !== hash)
      // Adding keeps the old password working until every instance has the new one.
      args.push(
        rotating
          ? ['ACL', 'SETUSER', 'default', `>${target}`]
          : ['ACL', 'SETUSER', 'default', 'resetpass', `>${target}`],
      );
    if (i.auth.masterauth !== hash) args.push(['CONFIG', 'SET', 'masterauth', target]);
    if (args.length > 0) steps.push({ pod: i.pod, ip: i.ip, connectWith: tried[i.password] ?? target, args });
  }
  const now = { password: auth.applied, ...(auth.previous === undefined ? {} : { previous: auth.previous }) };
  if (!rotating) return { steps, record: now };
  if (noAcl.length > 0)
    return {
      steps,
      record: now,
      waiting: `the password cannot change online: ${noAcl.join(', ')} answered without ACL support (Redis 6 or later needed)`,
    };
  if (unanswered.length > 0)
    return {
      steps,
      record: now,
      waiting: `the password changes once every instance answers; waiting for ${unanswered.join(', ')}`,
    };
  return { steps, record: { password: auth.desired, previous: auth.applied } };
};
