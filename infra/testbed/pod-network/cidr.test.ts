import { describe, expect, it } from 'vitest';
import { chooseRanges, intToIp, ipToInt, nthAddress, overlaps } from './cidr.ts';

describe('cidr', () => {
  it('converts addresses', () => {
    expect(intToIp(ipToInt('10.244.0.17'))).toBe('10.244.0.17');
    expect(nthAddress('10.244.0.0/24', 1)).toBe('10.244.0.1');
  });

  it('detects overlap', () => {
    expect(overlaps('10.0.0.0/8', '10.244.0.0/24')).toBe(true);
    expect(overlaps('10.245.0.0/24', '10.244.0.0/24')).toBe(false);
  });

  it('chooses ranges clear of existing routes', () => {
    expect(chooseRanges(['192.0.2.0/24'])).toEqual({ podCidr: '10.244.0.0/24', serviceCidr: '10.96.0.0/24' });
    expect(chooseRanges(['10.0.0.0/8'])).toEqual({ podCidr: '172.30.0.0/24', serviceCidr: '172.31.0.0/24' });
  });
});
