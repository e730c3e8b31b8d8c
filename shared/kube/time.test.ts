import { describe, expect, it } from 'vitest';
import { rfc3339 } from './time.ts';

describe('rfc3339', () => {
  it('writes seconds, as Kubernetes does', () => {
    expect(rfc3339(new Date('2026-11-22T03:00:00.999Z'))).toBe('2026-11-22T03:00:00Z');
    expect(rfc3339(new Date('2026-11-22T03:00:00.000Z'))).toBe('2026-11-22T03:00:00Z');
  });
});
