import { describe, expect, it } from 'vitest';
import { eventId } from './event-id.ts';
import { decodeToken, encodeToken, filterSubject, subjectFor } from './subjects.ts';
import { EventType } from './types.ts';

describe('subjects', () => {
  it('puts type, kind, namespace and name in one token each, escaping dots', () => {
    const s = subjectFor(EventType.updated, { kind: 'RedisCluster', namespace: 'prod', name: 'cache.eu' });
    expect(s).toBe('tideway.resource.updated.RedisCluster.prod.cache%2Eeu');
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
  });

  it('derives the same id from the same parts, different ids otherwise', () => {
    expect(eventId('uid', '42', 'updated')).toBe(eventId('uid', '42', 'updated'));
    expect(eventId('uid', '42', 'updated')).not.toBe(eventId('uid', '43', 'updated'));
    expect(eventId('a', 'bc')).not.toBe(eventId('ab', 'c'));
  });
});
