import { describe, expect, it } from 'vitest';
import { backupName, isEarlierRun, labelValue, madeBy, madeBySchedule } from './names.ts';

// What the API server accepts: a DNS-1123 subdomain (object names) and a label value.
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

describe('backupName', () => {
  it('is the schedule and the run in UTC minutes, the same every time', () => {
    const t = new Date('2026-11-22T03:00:00Z');
    expect(backupName('nightly', t)).toBe('nightly-202611220300');
    expect(backupName('nightly', new Date(t))).toBe(backupName('nightly', t));
    // The same instant written in another zone is the same run.
    expect(backupName('nightly', new Date('2026-11-22T04:00:00+01:00'))).toBe('nightly-202611220300');
  });

  it('tells apart the two runs of autumn’s repeated local hour', () => {
    // 02:30 in Berlin, twice: before and after the clocks go back.
    expect(backupName('b', new Date('2026-10-25T00:30:00Z'))).not.toBe(
      backupName('b', new Date('2026-10-25T01:30:00Z')),
    );
  });

  it('stays a valid, unique name for the longest schedule names', () => {
    const long = (c: string) => `${'a'.repeat(200)}.${c.repeat(52)}`; // 253 characters
    const t = new Date('2026-11-22T03:00:00Z');
    const [x, y] = [backupName(long('b'), t), backupName(long('c'), t)];
    expect(x.length).toBeLessThanOrEqual(253);
    expect(x).toMatch(SUBDOMAIN);
    expect(x).not.toBe(y);
    // A cut that would end in a dot must not leave an empty DNS label behind.
    const dotted = `${'a'.repeat(228)}.${'b'.repeat(24)}`;
    expect(backupName(dotted, t)).toMatch(SUBDOMAIN);
  });
});

describe('labelValue', () => {
  it('keeps short names and shortens long ones to a valid, distinct value', () => {
    expect(labelValue('nightly')).toBe('nightly');
    const a = labelValue(`${'x'.repeat(60)}.one`);
    const b = labelValue(`${'x'.repeat(60)}.two`);
    expect(a.length).toBeLessThanOrEqual(63);
    expect(a).toMatch(LABEL_VALUE);
    expect(a).not.toBe(b);
    expect(labelValue(`${'x'.repeat(51)}.-${'y'.repeat(20)}`)).toMatch(LABEL_VALUE);
  });
});

describe('madeBy', () => {
  const annotated = (name: string, uid: string) => ({
    metadata: { annotations: { 'tideway.dev/schedule-name': name, 'tideway.dev/schedule-uid': uid } },
  });
  const owned = (kind: string, controller: boolean) => ({
    metadata: {
      ownerReferences: [{ apiVersion: 'tideway.dev/v1alpha1', kind, name: 'old', uid: 'u1', controller }],
    },
  });

  it('reads the schedule from the annotations the schedule writes', () => {
    expect(madeBySchedule(annotated('nightly', 'u1'))).toEqual({ name: 'nightly', uid: 'u1' });
    expect(madeBy(annotated('nightly', 'u1'), 'u1')).toBe(true);
  });

  it('is not the schedule’s when the uid is another’s (an earlier schedule of that name) or absent', () => {
    expect(madeBy(annotated('nightly', 'u0'), 'u1')).toBe(false);
    expect(madeBy(annotated('nightly', ''), '')).toBe(false);
    expect(madeBy(annotated('nightly', 'u1'), undefined)).toBe(false);
    expect(madeBy({ metadata: { annotations: { 'tideway.dev/schedule-uid': 'u1' } } }, 'u1')).toBe(false);
    expect(madeBy({ metadata: { labels: { 'tideway.dev/schedule': 'nightly' } } } as never, 'u1')).toBe(
      false,
    );
  });

  it('is not the schedule’s when it is a copy of one of its Backups under another name', () => {
    const run = (name: string) => ({
      metadata: {
        name,
        annotations: {
          'tideway.dev/schedule-name': 'nightly',
          'tideway.dev/schedule-uid': 'u1',
          'tideway.dev/scheduled-time': '2026-11-22T03:00:00Z',
        },
      },
    });
    expect(madeBy(run(backupName('nightly', new Date('2026-11-22T03:00:00Z'))), 'u1')).toBe(true);
    expect(madeBy(run('pre-upgrade'), 'u1')).toBe(false);
    // Another run's name: not this run's Backup either.
    expect(madeBy(run(backupName('nightly', new Date('2026-11-23T03:00:00Z'))), 'u1')).toBe(false);
  });

  it('still reads the controller owner reference older versions wrote, and only that', () => {
    expect(madeBySchedule(owned('BackupSchedule', true))).toEqual({ name: 'old', uid: 'u1' });
    expect(madeBySchedule(owned('BackupSchedule', false))).toBeUndefined();
    expect(madeBySchedule(owned('RedisCluster', true))).toBeUndefined();
  });
});

describe('isEarlierRun', () => {
  it('orders two runs of a schedule by their minute; a name without one counts as earlier', () => {
    const run = (iso: string) => backupName('nightly', new Date(iso));
    expect(isEarlierRun(run('2026-11-21T03:00:00Z'), run('2026-11-22T03:00:00Z'))).toBe(true);
    expect(isEarlierRun(run('2026-11-23T03:00:00Z'), run('2026-11-22T03:00:00Z'))).toBe(false);
    expect(isEarlierRun('nightly-prev', run('2026-11-22T03:00:00Z'))).toBe(true);
  });
});
