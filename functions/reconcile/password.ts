import type { RedisCluster } from '../../shared/api/generated.ts';
import { serverSideApply } from '../../shared/kube/apply.ts';
import type { EventRecorder } from '../../shared/kube/events.ts';
import { type Auth, planAuth } from '../../shared/rediscluster/auth.ts';
import { authConfSecretFor } from '../../shared/rediscluster/desired.ts';
import type { LoadedCluster } from '../../shared/rediscluster/load.ts';
import { FIELD_MANAGER } from '../../shared/rediscluster/names.ts';
import { type Instance, onInstance } from '../../shared/rediscluster/probe.ts';
import { type HandlerContext, LockLostError } from '../../shared/runtime/handler.ts';

/**
 * Brings every instance's passwords to what planAuth says, then moves the record when all of
 * them accept the new password. Returns the password every instance accepts now, for the rest of
 * this run, and why the rotation waits, if it does.
 */
export const rollPassword = async (o: {
  ctx: HandlerContext;
  rc: RedisCluster;
  auth: Auth;
  instances: readonly Instance[];
  recorder: EventRecorder;
  regarding: LoadedCluster['regarding'];
}): Promise<{ password: string; waiting?: string }> => {
  const { ctx } = o;
  const plan = planAuth(o.auth, o.instances);
  let failed = 0;
  for (const step of plan.steps) {
    try {
      ctx.fence();
      await onInstance(step.ip, step.connectWith, async (r) => {
        for (const args of step.args) {
          // Again once connected, and between commands: a run that stalled must not send them.
          ctx.fence();
          await r.command(...args);
        }
      });
      // The commands carry the password: only their names go to the log.
      ctx.log.info('password', { pod: step.pod, commands: step.args.map((a) => a.slice(0, 2).join(' ')) });
    } catch (error) {
      if (error instanceof LockLostError) throw error;
      failed++;
      ctx.log.warn('password step failed', { pod: step.pod, error: (error as Error).message });
    }
  }
  if (plan.record.password === o.auth.applied)
    return {
      password: o.auth.applied,
      ...waitingOf(plan.waiting ?? (failed > 0 ? 'a password step failed; trying again' : undefined)),
    };
  if (failed > 0)
    return { password: o.auth.applied, waiting: 'the new password is not accepted everywhere yet' };
  ctx.fence();
  await serverSideApply(ctx.kube, FIELD_MANAGER)(authConfSecretFor(o.rc, plan.record));
  ctx.log.info('password rotated');
  await o.recorder.record({
    regarding: o.regarding,
    type: 'Normal',
    reason: 'PasswordRotated',
    action: 'RotatePassword',
    note: 'every instance accepts the new password; the old one is being removed',
  });
  // The last step (each instance accepts the new password alone) is the next run's: ask for it
  // now, since nothing else may wake this cluster's reconcile soon.
  return { password: plan.record.password, waiting: 'removing the old password from every instance' };
};

const waitingOf = (waiting: string | undefined) => (waiting === undefined ? {} : { waiting });
