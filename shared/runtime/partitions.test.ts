import { describe, expect, it } from 'vitest';
import { prioritiesOf } from './partitions.ts';

describe('prioritiesOf', () => {
  const firsts = (members: string[], partitions = 12) =>
    members.map((m) =>
      prioritiesOf(members, m, partitions)
        .map((prio, p) => (prio === 0 ? p : -1))
        .filter((p) => p >= 0),
    );

  it('puts exactly one member first for every partition, evenly', () => {
    for (const n of [1, 2, 3, 4, 6]) {
      const members = Array.from({ length: n }, (_, i) => `host-${i}`);
      const f = firsts(members);
      expect(f.flat().sort((a, b) => a - b)).toEqual([...Array(12).keys()]);
      for (const mine of f) expect(mine).toHaveLength(12 / n);
    }
  });

  it('gives every member a distinct priority for a partition (up to ten members)', () => {
    const members = ['c', 'a', 'b'];
    for (let p = 0; p < 12; p++)
      expect(new Set(members.map((m) => prioritiesOf(members, m, 12)[p])).size).toBe(3);
  });

  it('does not depend on the order members were heard of, and counts itself', () => {
    expect(prioritiesOf(['b', 'a'], 'a', 12)).toEqual(prioritiesOf(['a', 'b'], 'a', 12));
    expect(prioritiesOf([], 'a', 4)).toEqual([0, 0, 0, 0]);
    expect(prioritiesOf(['b'], 'a', 4)).toEqual([0, 1, 0, 1]);
    expect(prioritiesOf(['a'], 'b', 4)).toEqual([1, 0, 1, 0]);
  });
});
