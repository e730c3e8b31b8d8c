import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { WebhookKube } from './kube.ts';
import { secretKeys } from './secrets.ts';

describe('secretKeys', () => {
  it('reads a namespace’s Secret once for all the requests that miss the cache together', async () => {
    const answers: ((v: string | undefined) => void)[] = [];
    const kube = {
      webhookSecret: () => new Promise<string | undefined>((resolve) => answers.push(resolve)),
    } as unknown as WebhookKube;
    const keys = secretKeys(kube);
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const waiting = Array.from({ length: 20 }, () => keys.key('ns', 1000));
    const other = keys.key('other', 1000).catch((e: { code?: string }) => e.code);
    await new Promise((r) => setTimeout(r, 5));
    expect(answers).toHaveLength(2);
    for (const answer of answers) answer(answers.indexOf(answer) === 0 ? secret : undefined);
    const got = await Promise.all(waiting);
    expect(new Set(got.map((k) => k.toString('base64'))).size).toBe(1);
    expect(await other).toBe('WebhookNotConfigured');
    // Read again once the answer is older than the cache keeps it.
    void keys.key('ns', 1000 + 5001);
    expect(answers).toHaveLength(3);
  });
});

describe('secretKeys after a rotation', () => {
  it('reads the Secret afresh for a failed signature, not joining a read begun before the rotation', async () => {
    const k1 = `whsec_${randomBytes(32).toString('base64')}`;
    const k2 = `whsec_${randomBytes(32).toString('base64')}`;
    let current = k1;
    const pending: (() => void)[] = [];
    let slow = false;
    const kube = {
      webhookSecret: () => {
        const value = current; // what the API server holds when the read begins
        return slow
          ? new Promise<string>((resolve) => pending.push(() => resolve(value)))
          : Promise.resolve(value);
      },
    } as unknown as WebhookKube;
    const keys = secretKeys(kube);
    await keys.key('ns', 0);
    // A request with a bad signature at 2 s starts a read, which is slow; the secret rotates.
    slow = true;
    const first = keys.refresh('ns', 2000);
    current = k2;
    slow = false;
    // A request signed with the new secret fails on the cached key and looks again.
    const fresh = await keys.refresh('ns', 2001);
    expect(fresh?.toString('base64')).toBe(k2.slice(6));
    for (const resolve of pending) resolve();
    await first;
    // The slow read answered last, with the old key: the cache keeps the new one.
    expect((await keys.key('ns', 2002)).toString('base64')).toBe(k2.slice(6));
  });
});
