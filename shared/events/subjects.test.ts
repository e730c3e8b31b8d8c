import { describe, expect, it } from 'vitest';
import { eventId } from './event-id.ts';
import { decodeToken, encodeToken, filterSubject, PARTITIONS, partitionOf, subjectFor } from './subjects.ts';
import { EventType } from './types.ts';

describe('subjects', () => {
  it('puts type, kind, namespace and name in one token each, escaping dots', () => {
    const s = subjectFor(EventType.updated, { kind: 'RedisCluster', namespace: 'prod', name: 'cache.eu' });
    expect(s).toBe(
      `tideway.resource.updated.RedisCluster.prod.cache%2Eeu.${partitionOf({ kind: 'RedisCluster', namespace: 'prod', name: 'cache.eu' })}`,
    );
    expect(decodeToken('cache%2Eeu')).toBe('cache.eu');
    expect(encodeToken('a*b>c')).toBe('a%2Ab%3Ec');
  });

  it('turns a serverless.yml type pattern into a filter subject', () => {
    expect(filterSubject('dev.tideway.resource.*', 'Backup')).toBe('tideway.resource.*.Backup.>');
    expect(filterSubject('dev.tideway.tick.health')).toBe('tideway.tick.health.*.>');
    expect(filterSubject('dev.tideway.resource.*', 'RedisCluster', 'team-a')).toBe(
      'tideway.resource.*.RedisCluster.team-a.>',
    );
    expect(filterSubject('dev.tideway.tick.health', undefined, 'team-a')).toBe(
      'tideway.tick.health.*.team-a.>',
    );
    expect(() => filterSubject('com.example.x')).toThrow(/not a Tideway type/);
    // One partition: the name is a wildcard, the partition the last token.
    expect(filterSubject('dev.tideway.resource.*', 'RedisCluster', undefined, 3)).toBe(
      'tideway.resource.*.RedisCluster.*.*.3',
    );
    expect(filterSubject('dev.tideway.tick.health', undefined, 'team-a', 11)).toBe(
      'tideway.tick.health.*.team-a.*.11',
    );
  });

  it('puts every event of one object in one partition, and spreads objects over all of them', () => {
    const ref = { kind: 'RedisCluster', namespace: 'prod', name: 'cache' };
    // Pinned: a change of the hash would re-route every object of a running installation.
    expect(partitionOf(ref)).toBe(5);
    expect(partitionOf({ ...ref, name: 'cache.eu' })).toBe(3);
    expect(subjectFor(EventType.healthTick, ref).split('.').at(-1)).toBe(
      subjectFor(EventType.updated, ref).split('.').at(-1),
    );
    const counts = new Array(PARTITIONS).fill(0);
    for (let i = 0; i < 1200; i++) counts[partitionOf({ ...ref, name: `c-${i}` })]++;
    expect(Math.min(...counts)).toBeGreaterThan(60);
    expect(Math.max(...counts)).toBeLessThan(140);
  });

  it('derives the same id from the same parts, different ids otherwise', () => {
    expect(eventId('uid', '42', 'updated')).toBe(eventId('uid', '42', 'updated'));
    expect(eventId('uid', '42', 'updated')).not.toBe(eventId('uid', '43', 'updated'));
    expect(eventId('a', 'bc')).not.toBe(eventId('ab', 'c'));
  });
});
