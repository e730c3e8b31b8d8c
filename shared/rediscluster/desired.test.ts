import { describe, expect, it } from 'vitest';
import { statefulSetReplicas } from './desired.ts';

describe('statefulSetReplicas', () => {
  it('follows spec.replicas up and down while the master serves inside the new size', () => {
    expect(statefulSetReplicas({ desired: 5, masterOrdinal: 0, masterLost: false, current: 3 })).toBe(5);
    expect(statefulSetReplicas({ desired: 2, masterOrdinal: 1, masterLost: false, current: 5 })).toBe(2);
  });

  it('keeps the master until it has handed over', () => {
    expect(statefulSetReplicas({ desired: 2, masterOrdinal: 3, masterLost: false, current: 5 })).toBe(4);
  });

  it('removes no instance while the master is lost: the one to promote may be among them', () => {
    expect(statefulSetReplicas({ desired: 1, masterOrdinal: 0, masterLost: true, current: 3 })).toBe(3);
    // Growing is still fine, and a new cluster has no StatefulSet yet.
    expect(statefulSetReplicas({ desired: 4, masterOrdinal: 0, masterLost: true, current: 3 })).toBe(4);
    expect(statefulSetReplicas({ desired: 3, masterOrdinal: -1, masterLost: true, current: undefined })).toBe(
      3,
    );
  });
});
