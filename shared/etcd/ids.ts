/**
 * etcd member ids are uint64: beyond a JS number's exact range, so they stay strings here, in the
 * decimal form the gateway uses. etcdctl and etcd's logs print them in hex; these convert.
 */
export type MemberId = string;

const maxU64 = (1n << 64n) - 1n;

/** A member id as the gateway sends it, checked: decimal, no sign, at most 2^64-1. */
export const isMemberId = (s: string): boolean => /^\d{1,20}$/.test(s) && BigInt(s) <= maxU64;

/** Decimal → etcdctl's hex (lower case, no leading zeros). */
export const memberIdToHex = (id: MemberId): string => {
  if (!isMemberId(id)) throw new RangeError(`not an etcd member id: ${JSON.stringify(id)}`);
  return BigInt(id).toString(16);
};

/** etcdctl's hex (with or without 0x) → decimal. */
export const memberIdFromHex = (hex: string): MemberId => {
  const digits = hex.replace(/^0x/i, '');
  if (!/^[0-9a-f]{1,16}$/i.test(digits))
    throw new RangeError(`not a hex etcd member id: ${JSON.stringify(hex)}`);
  return BigInt(`0x${digits}`).toString(10);
};
