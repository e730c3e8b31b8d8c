import { describe, expect, it } from 'vitest';
import { EtcdProtocolError } from './errors.ts';
import {
  decodeBase64,
  parseAnswer,
  zAlarms,
  zHashKV,
  zMemberAdd,
  zMemberList,
  zRange,
  zStatus,
} from './wire.ts';

// Answers captured from etcd 3.6.16's gateway.
const header = {
  cluster_id: '15118495548433857066',
  member_id: '13668033151171901709',
  revision: '2',
  raft_term: '2',
};

describe('gateway answers', () => {
  it('status: uint64 ids stay exact strings, counters become numbers, zero values default', () => {
    const s = parseAnswer(
      zStatus,
      {
        header,
        version: '3.6.16',
        dbSize: '20480',
        leader: '13668033151171901709',
        raftIndex: '4',
        raftTerm: '2',
        raftAppliedIndex: '4',
        dbSizeInUse: '16384',
        storageVersion: '3.6.0',
        dbSizeQuota: '2147483648',
        downgradeInfo: {},
      },
      'status',
    );
    expect(s).toMatchObject({
      version: '3.6.16',
      dbSize: 20480,
      dbSizeInUse: 16384,
      leader: '13668033151171901709',
      raftIndex: 4,
      isLearner: false,
      errors: [],
      dbSizeQuota: 2147483648,
    });
    expect(s.header).toEqual({
      clusterId: '15118495548433857066',
      memberId: '13668033151171901709',
      revision: 2,
      raftTerm: 2,
    });
    // etcd 3.5: no storageVersion/dbSizeQuota; no leader is "leader" left out.
    const old = parseAnswer(
      zStatus,
      { header, version: '3.5.21', errors: ['etcdserver: no leader'] },
      'status',
    );
    expect([old.leader, old.storageVersion, old.dbSizeQuota, old.errors]).toEqual([
      '0',
      undefined,
      undefined,
      ['etcdserver: no leader'],
    ]);
  });

  it('members: an unstarted learner has no name and no client URLs', () => {
    const r = parseAnswer(
      zMemberAdd,
      {
        header,
        member: { ID: '18446744073709551615', peerURLs: ['http://127.0.0.1:2380'], isLearner: true },
        members: [
          {
            ID: '13668033151171901709',
            name: 'p1',
            peerURLs: ['http://a:2380'],
            clientURLs: ['http://a:2379'],
          },
          { ID: '18446744073709551615', peerURLs: ['http://127.0.0.1:2380'], isLearner: true },
        ],
      },
      'member add',
    );
    expect(r.member).toEqual({
      id: '18446744073709551615',
      name: '',
      peerURLs: ['http://127.0.0.1:2380'],
      clientURLs: [],
      isLearner: true,
    });
    expect(r.members.map((m) => m.isLearner)).toEqual([false, true]);
    expect(parseAnswer(zMemberList, { header }, 'member list').members).toEqual([]);
  });

  it('range: bytes decoded, count and revisions as numbers', () => {
    const r = parseAnswer(
      zRange,
      {
        header,
        kvs: [{ key: 'YQ==', create_revision: '2', mod_revision: '2', version: '1', value: 'Yg==' }],
        count: '1',
      },
      'range',
    );
    expect(r.kvs[0]?.key.toString()).toBe('a');
    expect(r.kvs[0]?.value.toString()).toBe('b');
    expect([r.count, r.more, r.kvs[0]?.lease, r.kvs[0]?.modRevision]).toEqual([1, false, '0', 2]);
    // An empty value is left out.
    expect(
      parseAnswer(zRange, { header, kvs: [{ key: 'YQ==' }], count: '1' }, 'range').kvs[0]?.value.length,
    ).toBe(0);
  });

  it('alarms and hashkv', () => {
    expect(parseAnswer(zAlarms, { header }, 'alarm list')).toEqual([]);
    expect(
      parseAnswer(
        zAlarms,
        { header, alarms: [{ memberID: '42', alarm: 'NOSPACE' }, { memberID: '7' }] },
        'alarm',
      ),
    ).toEqual([
      { memberId: '42', alarm: 'NOSPACE' },
      { memberId: '7', alarm: 'NONE' },
    ]);
    expect(
      parseAnswer(
        zHashKV,
        { header, hash: 3628877040, compact_revision: '-1', hash_revision: '2' },
        'hashkv',
      ),
    ).toMatchObject({ hash: 3628877040, compactRevision: -1, hashRevision: 2 });
  });

  it('refuses what it cannot represent exactly, naming the call and the path', () => {
    expect(() =>
      parseAnswer(zStatus, { header, raftIndex: '9007199254740993' }, 'status', 'http://x:1'),
    ).toThrow(/status: unexpected answer from http:\/\/x:1 at raftIndex: 9007199254740993 is past 2\^53/);
    expect(() => parseAnswer(zMemberList, { members: [{ ID: 5 }] }, 'member list')).toThrow(
      EtcdProtocolError,
    );
    expect(() => parseAnswer(zRange, { kvs: [{ key: 'a!b' }] }, 'range')).toThrow(/kvs.0.key: not base64/);
  });
});

describe('decodeBase64', () => {
  it('takes standard and URL-safe, padded or not; refuses what Buffer would skip', () => {
    expect(decodeBase64('YWJj')?.toString()).toBe('abc');
    expect(decodeBase64('YWI=')?.toString()).toBe('ab');
    expect(decodeBase64('YWI')?.toString()).toBe('ab');
    expect(decodeBase64('_-8')).toEqual(Buffer.from([0xff, 0xef]));
    expect(decodeBase64('')?.length).toBe(0);
    expect(decodeBase64('YW Jj')).toBeUndefined();
    expect(decodeBase64('YW*j')).toBeUndefined();
  });
});
