import { describe, expect, it } from 'vitest';
import { historyIds, recordHistory } from './promotion.ts';

describe('recordHistory', () => {
  it('keeps the same record while the id does not change, with the newest offset', () => {
    const h = recordHistory({ id: 'a', offset: 1, previous: ['z'] }, { replid: 'a', offset: 9 });
    expect(h).toEqual({ id: 'a', offset: 9, previous: ['z'] });
  });

  it('pushes the record and the id the master continued from, newest first, at most 8', () => {
    // 'b' was never seen serving (a second promotion came first): the master still names it.
    const h = recordHistory({ id: 'a', offset: 5 }, { replid: 'c', replid2: 'b', offset: 7 });
    expect(h).toEqual({ id: 'c', offset: 7, previous: ['b', 'a'] });
    const long = recordHistory(
      { id: 'x', offset: 0, previous: ['1', '2', '3', '4', '5', '6', '7', '8'] },
      { replid: 'y', offset: 1 },
    );
    expect(long.previous).toEqual(['x', '1', '2', '3', '4', '5', '6', '7']);
    expect(historyIds(long)).toEqual(['y', 'x', '1', '2', '3', '4', '5', '6', '7']);
  });

  it('never records the zero id of a server that never had a master', () => {
    const h = recordHistory({ id: 'a', offset: 1 }, { replid: 'b', replid2: '0'.repeat(40), offset: 2 });
    expect(h.previous).toEqual(['a']);
  });
});
