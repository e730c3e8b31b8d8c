import { describe, expect, it } from 'vitest';
import { formatResolvConf, parseResolvConf } from './resolv-conf.ts';

describe('resolv.conf', () => {
  it('reads it as kubelet does: nameservers add up, the last search and options lines win', () => {
    const text = [
      '# generated',
      'nameserver 10.0.0.2',
      'domain ignored.example',
      'search old.example',
      '  search a.example. b.example  ',
      'nameserver 10.0.0.3',
      'nameserver',
      'options rotate',
      'options ndots:2 edns0',
      '',
    ].join('\n');
    expect(parseResolvConf(text)).toEqual({
      nameservers: ['10.0.0.2', '10.0.0.3'],
      searches: ['a.example', 'b.example'],
      options: ['ndots:2', 'edns0'],
    });
    expect(parseResolvConf('')).toEqual({ nameservers: [], searches: [], options: [] });
  });

  it('writes it as containerd does: search, nameservers, options; nothing for an empty one', () => {
    expect(
      formatResolvConf({ nameservers: ['10.0.0.1', '10.0.0.2'], searches: ['a', 'b'], options: ['ndots:5'] }),
    ).toBe('search a b\nnameserver 10.0.0.1\nnameserver 10.0.0.2\noptions ndots:5\n');
    expect(formatResolvConf({ nameservers: [], searches: [], options: [] })).toBe('');
  });
});
