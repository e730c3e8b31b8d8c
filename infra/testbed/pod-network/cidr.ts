/** IPv4 helpers for /8–/30 ranges: enough for the test bed's pod and service CIDRs. */
export const ipToInt = (ip: string): number =>
  ip.split('.').reduce((n, part) => (n << 8) + Number(part), 0) >>> 0;

export const intToIp = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');

export const parseCidr = (cidr: string): { base: number; bits: number; size: number } => {
  const [ip, bits] = cidr.split('/');
  const b = Number(bits);
  const mask = b === 0 ? 0 : (~0 << (32 - b)) >>> 0;
  return { base: (ipToInt(ip ?? '0.0.0.0') & mask) >>> 0, bits: b, size: 2 ** (32 - b) };
};

export const overlaps = (a: string, b: string): boolean => {
  const x = parseCidr(a);
  const y = parseCidr(b);
  return x.base < y.base + y.size && y.base < x.base + x.size;
};

/** The n-th address of a range (0 = network address). */
export const nthAddress = (cidr: string, n: number): string => intToIp(parseCidr(cidr).base + n);

/** First candidate pair whose ranges overlap none of the machine's routes (default route excluded). */
export const chooseRanges = (
  routes: readonly string[],
  candidates: readonly (readonly [pod: string, service: string])[] = [
    ['10.244.0.0/24', '10.96.0.0/24'],
    ['10.245.0.0/24', '10.97.0.0/24'],
    ['172.30.0.0/24', '172.31.0.0/24'],
    ['192.168.250.0/24', '192.168.251.0/24'],
  ],
): { podCidr: string; serviceCidr: string } => {
  for (const [pod, service] of candidates) {
    if (routes.every((r) => !overlaps(r, pod) && !overlaps(r, service)))
      return { podCidr: pod, serviceCidr: service };
  }
  throw new Error(
    `no free pod/service range: all of ${candidates.flat().join(', ')} overlap routes of this machine`,
  );
};
