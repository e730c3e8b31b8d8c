import { describe, expect, it } from 'vitest';
import { type Auth, passwordsOf, planAuth } from './auth.ts';
import type { Instance } from './probe.ts';
import { passwordHash as h } from './probe.ts';

const instance = (pod: string, accepts: string[], masterauth: string, password = 0): Instance => ({
  pod,
  ordinal: Number(pod.slice(-1)),
  ip: `10.0.0.${pod.slice(-1)}`,
  podReady: true,
  terminating: false,
  replication: { role: 'replica' } as Instance['replication'],
  password,
  auth: { accepts: accepts.map(h), masterauth: h(masterauth) },
});

describe('planAuth', () => {
  it('adds the new password everywhere before recording it: the old one keeps working meanwhile', () => {
    const auth: Auth = { desired: 'new', applied: 'old' };
    const plan = planAuth(auth, [instance('c-0', ['old'], 'old'), instance('c-1', ['old'], 'old')]);
    expect(plan.steps.map((s) => s.args)).toEqual([
      [
        ['ACL', 'SETUSER', 'default', '>new'],
        ['CONFIG', 'SET', 'masterauth', 'new'],
      ],
      [
        ['ACL', 'SETUSER', 'default', '>new'],
        ['CONFIG', 'SET', 'masterauth', 'new'],
      ],
    ]);
    // Connected with the password each accepted (index into passwordsOf: old first).
    expect(plan.steps.map((s) => s.connectWith)).toEqual(['old', 'old']);
    expect(plan.record).toEqual({ password: 'new', previous: 'old' });
    expect(plan.waiting).toBeUndefined();
  });

  it('does not record the new password while an instance has not answered', () => {
    const silent: Instance = { pod: 'c-2', ordinal: 2, podReady: false, terminating: false };
    const plan = planAuth({ desired: 'new', applied: 'old' }, [instance('c-0', ['old'], 'old'), silent]);
    expect(plan.record).toEqual({ password: 'old' });
    expect(plan.waiting).toContain('c-2');
    expect(plan.steps).toHaveLength(1);
  });

  it('once recorded, makes each instance accept the recorded password alone', () => {
    const auth: Auth = { desired: 'new', applied: 'new', previous: 'old' };
    const plan = planAuth(auth, [instance('c-0', ['old', 'new'], 'new'), instance('c-1', ['new'], 'new')]);
    expect(plan.steps).toEqual([
      {
        pod: 'c-0',
        ip: '10.0.0.0',
        connectWith: 'new',
        args: [['ACL', 'SETUSER', 'default', 'resetpass', '>new']],
      },
    ]);
    expect(plan.record).toEqual({ password: 'new', previous: 'old' });
  });

  it('brings an instance that restarted with the previous password (stale file) up to date', () => {
    const auth: Auth = { desired: 'new', applied: 'new', previous: 'old' };
    // passwordsOf → ['new', 'old']: it answered to the second.
    const plan = planAuth(auth, [instance('c-1', ['old'], 'old', 1)]);
    expect(plan.steps).toEqual([
      {
        pod: 'c-1',
        ip: '10.0.0.1',
        connectWith: 'old',
        args: [
          ['ACL', 'SETUSER', 'default', 'resetpass', '>new'],
          ['CONFIG', 'SET', 'masterauth', 'new'],
        ],
      },
    ]);
  });

  it('changes nothing when every instance already accepts the recorded password alone', () => {
    const plan = planAuth({ desired: 'p', applied: 'p' }, [instance('c-0', ['p'], 'p')]);
    expect(plan).toEqual({ steps: [], record: { password: 'p' } });
  });

  it('tries the recorded password first, then the wanted one, then the one before', () => {
    expect(passwordsOf({ desired: 'b', applied: 'a', previous: 'z' })).toEqual(['a', 'b', 'z']);
    expect(passwordsOf({ desired: 'a', applied: 'a' })).toEqual(['a']);
  });
});

describe('planAuth without ACLs', () => {
  it('says a server without ACL support cannot rotate, instead of waiting for it to answer', () => {
    const old: Instance = { ...instance('c-0', ['old'], 'old') };
    delete old.auth;
    const plan = planAuth({ desired: 'new', applied: 'old' }, [old]);
    expect(plan.record).toEqual({ password: 'old' });
    expect(plan.waiting).toContain('without ACL support');
  });
});
