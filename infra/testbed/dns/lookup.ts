import { isIPv4, isIPv6 } from 'node:net';
import { type Question, RCODE, type ResourceRecord, TYPE } from './message.ts';
import { canonical, inZone } from './name.ts';
import { type Entry, findRecords, namesForIp } from './records.ts';
import type { ClusterView } from './view.ts';

export type LookupOptions = {
  /** The cluster domain, `cluster.local`. */
  readonly zone: string;
  /** TTL of every record (CoreDNS's kubernetes plugin: 5 s). */
  readonly ttl: number;
  /** SOA serial. */
  readonly serial: number;
};

export type LookupResult =
  | {
      readonly kind: 'answer';
      readonly rcode: number;
      readonly answers: readonly ResourceRecord[];
      readonly authorities: readonly ResourceRecord[];
      readonly additionals: readonly ResourceRecord[];
    }
  /** Not ours: ask the upstream resolvers. */
  | { readonly kind: 'forward' }
  /** An ExternalName Service's CNAME to a name outside the cluster: its target's records follow. */
  | { readonly kind: 'chase'; readonly cname: ResourceRecord; readonly target: string };

const REVERSE_ZONES = ['in-addr.arpa', 'ip6.arpa'];
/** The Kubernetes DNS specification version, answered at `dns-version.<zone>` TXT. */
const SCHEMA_VERSION = '1.1.0';
const MAX_CNAME_CHAIN = 10;

/**
 * Answers one question as CoreDNS's kubernetes plugin does with kubeadm's Corefile
 * (`kubernetes cluster.local in-addr.arpa ip6.arpa { pods insecure; fallthrough in-addr.arpa
 * ip6.arpa }`, then `forward . /etc/resolv.conf`): the cluster domain from the view, PTR for
 * ClusterIPs and endpoints, anything else forwarded.
 */
export const lookup = (view: ClusterView, q: Question, o: LookupOptions): LookupResult => {
  if (REVERSE_ZONES.some((z) => inZone(q.name, z))) return reverse(view, q, o);
  if (!inZone(q.name, o.zone)) return { kind: 'forward' };
  if (!view.synced) return reply(RCODE.SERVFAIL);
  const labels = relativeLabels(q.name, o.zone);
  const soa = soaRecord(o);
  const empty = (exists: boolean) => reply(exists ? RCODE.NOERROR : RCODE.NXDOMAIN, [], [soa]);
  const found = () => findRecords(view, labels, o.zone);

  switch (q.type) {
    case TYPE.A:
    case TYPE.AAAA: {
      const f = found();
      if (!f.exists) return empty(false);
      const r = addresses(view, q.name, q.type, f.entries, o, 0);
      if ('target' in r) return { kind: 'chase', ...r };
      return r.length > 0 ? reply(RCODE.NOERROR, r) : empty(true);
    }
    case TYPE.SRV: {
      const f = found();
      if (!f.exists) return empty(false);
      const { answers, additionals } = srv(q.name, f.entries, o);
      return answers.length > 0 ? reply(RCODE.NOERROR, answers, [], additionals) : empty(true);
    }
    case TYPE.TXT: {
      if (labels.length === 1 && labels[0] === 'dns-version')
        return reply(RCODE.NOERROR, [{ name: q.name, ttl: 28800, type: 'TXT', texts: [SCHEMA_VERSION] }]);
      // CoreDNS: a name with records of another type is NODATA, anything else NXDOMAIN.
      return empty(found().entries.length > 0);
    }
    case TYPE.CNAME: {
      const f = found();
      const external = f.entries.find((e) => !isIPv4(e.host) && !isIPv6(e.host));
      if (external) return reply(RCODE.NOERROR, [cnameRecord(q.name, external.host, o)]);
      return empty(f.exists);
    }
    case TYPE.SOA:
      // CoreDNS answers SOA at the apex and NODATA for every other name of the zone.
      return labels.length === 0 ? reply(RCODE.NOERROR, [{ ...soa, name: q.name }]) : empty(true);
    case TYPE.AXFR:
    case TYPE.IXFR:
      return reply(RCODE.REFUSED);
    default:
      // Whether the name exists decides NODATA or NXDOMAIN, as CoreDNS's fake A lookup does.
      return empty(found().exists);
  }
};

const reply = (
  rcode: number,
  answers: readonly ResourceRecord[] = [],
  authorities: readonly ResourceRecord[] = [],
  additionals: readonly ResourceRecord[] = [],
): LookupResult => ({ kind: 'answer', rcode, answers, authorities, additionals });

const relativeLabels = (name: string, zone: string): string[] => {
  const n = canonical(name);
  const z = canonical(zone);
  return n === z ? [] : n.slice(0, -(z.length + 1)).split('.');
};

const soaRecord = (o: LookupOptions): ResourceRecord => ({
  name: o.zone,
  ttl: o.ttl,
  type: 'SOA',
  mname: `ns.dns.${o.zone}`,
  rname: `hostmaster.${o.zone}`,
  serial: o.serial,
  refresh: 7200,
  retry: 1800,
  expire: 86400,
  minimum: o.ttl,
});

const cnameRecord = (name: string, target: string, o: LookupOptions): ResourceRecord => ({
  name,
  ttl: o.ttl,
  type: 'CNAME',
  target,
});

/**
 * A or AAAA records for the entries. An ExternalName's CNAME into the cluster domain is followed
 * here (and left out if it leads nowhere, as CoreDNS does); one out of it is chased upstream.
 */
const addresses = (
  view: ClusterView,
  name: string,
  type: number,
  entries: readonly Entry[],
  o: LookupOptions,
  depth: number,
): ResourceRecord[] | { cname: ResourceRecord; target: string } => {
  const out: ResourceRecord[] = [];
  const seen = new Set<string>();
  for (const e of entries) {
    if (isIPv4(e.host) || isIPv6(e.host)) {
      const wanted = type === TYPE.A ? isIPv4(e.host) : isIPv6(e.host);
      if (!wanted || seen.has(e.host)) continue;
      seen.add(e.host);
      out.push({ name, ttl: o.ttl, type: type === TYPE.A ? 'A' : 'AAAA', address: e.host });
      continue;
    }
    if (canonical(e.host) === canonical(name) || depth >= MAX_CNAME_CHAIN) continue;
    const cname = cnameRecord(name, e.host, o);
    if (!inZone(e.host, o.zone)) return { cname, target: e.host };
    const next = findRecords(view, relativeLabels(e.host, o.zone), o.zone);
    const chained = addresses(view, e.host, type, next.entries, o, depth + 1);
    if ('target' in chained) return { cname, target: chained.target };
    if (chained.length > 0) out.push(cname, ...chained);
  }
  return out;
};

/** SRV records pointing at each entry's name, that name's address in the additional section. */
const srv = (name: string, entries: readonly Entry[], o: LookupOptions) => {
  const internal = entries.filter((e) => isIPv4(e.host) || isIPv6(e.host));
  // CoreDNS spreads a weight of 100 over all records of the one priority it uses.
  const weight = Math.max(1, Math.floor(100 / Math.max(1, internal.length)));
  const answers: ResourceRecord[] = [];
  const additionals: ResourceRecord[] = [];
  const seen = new Set<string>();
  for (const e of internal) {
    if (e.port === -1) continue;
    if (!seen.has(`${e.target} ${e.port}`)) {
      seen.add(`${e.target} ${e.port}`);
      answers.push({ name, ttl: o.ttl, type: 'SRV', priority: 0, weight, port: e.port, target: e.target });
    }
    if (!seen.has(`${e.target} ${e.host}`)) {
      seen.add(`${e.target} ${e.host}`);
      additionals.push({ name: e.target, ttl: o.ttl, type: isIPv4(e.host) ? 'A' : 'AAAA', address: e.host });
    }
  }
  return { answers, additionals };
};

/** PTR for a ClusterIP or an endpoint; anything else in the reverse zones goes upstream. */
const reverse = (view: ClusterView, q: Question, o: LookupOptions): LookupResult => {
  const ip = q.type === TYPE.PTR ? addressOfReverse(q.name) : undefined;
  const names = ip && view.synced ? namesForIp(view, ip, o.zone) : [];
  if (names.length === 0) return { kind: 'forward' };
  return reply(
    RCODE.NOERROR,
    names.map((target) => ({ name: q.name, ttl: o.ttl, type: 'PTR', target })),
  );
};

/** `4.3.2.1.in-addr.arpa` → 1.2.3.4; 32 nibbles under ip6.arpa → an IPv6 address. */
const addressOfReverse = (name: string): string | undefined => {
  const n = canonical(name);
  if (n.endsWith('.in-addr.arpa')) {
    const parts = n.slice(0, -'.in-addr.arpa'.length).split('.').reverse();
    const ip = parts.join('.');
    return parts.length === 4 && isIPv4(ip) ? ip : undefined;
  }
  if (n.endsWith('.ip6.arpa')) {
    const nibbles = n.slice(0, -'.ip6.arpa'.length).split('.').reverse();
    if (nibbles.length !== 32 || nibbles.some((x) => !/^[0-9a-f]$/.test(x))) return undefined;
    const words = [];
    for (let i = 0; i < 32; i += 4) words.push(nibbles.slice(i, i + 4).join(''));
    // The URL parser writes an IPv6 address in its canonical form, as the API server stores it.
    return new URL(`http://[${words.join(':')}]/`).hostname.slice(1, -1);
  }
  return undefined;
};
