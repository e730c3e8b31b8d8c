import { describe, expect, it } from 'vitest';
import { renewAt } from './projected.ts';

describe('projected token renewal', () => {
  it('renews at 80% of the lifetime, at the latest after 24 hours, as kubelet does', () => {
    const hour = 3600 * 1000;
    expect(renewAt(0, hour)).toBe(0.8 * hour);
    expect(renewAt(1000, 1000 + 10 * hour)).toBe(1000 + 8 * hour);
    expect(renewAt(0, 365 * 24 * hour)).toBe(24 * hour);
  });
});
