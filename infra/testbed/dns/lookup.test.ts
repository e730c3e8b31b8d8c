import { describe, expect, it } from 'vitest';
import { fixtureView } from './fixtures.ts';
import { type LookupResult, lookup } from './lookup.ts';
import { RCODE, type ResourceRecord, TYPE } from './message.ts';
import { viewOf } from './view.ts';

const o = { zone: 'cluster.local', ttl: 5, serial: 1 };
const view = fixtureView();
const ask = (name: string, type: number = TYPE.A, v = view) => lookup(v, { name, type, class: 1 }, o);

const answered = (r: LookupResult) => {
  if (r.kind !== 'answer') throw new Error(`expected an answer, got ${r.kind}`);
  return r;
};
const values = (records: readonly ResourceRecord[]) =>
  records.map((r) =>
    r.type === 'A' || r.type === 'AAAA'
      ? r.address
      : r.type === 'SRV'
        ? `${r.port} ${r.weight} ${r.target}`
        : 'target' in r
          ? r.target
          : r.type,
  );
const addressesOf = (name: string, type: number = TYPE.A) => {
  const r = answered(ask(name, type));
  expect(r.rcode, name).toBe(RCODE.NOERROR);
  return values(r.answers);
};
const rcodeOf = (name: string, type: number = TYPE.A) => answered(ask(name, type)).rcode;

describe('cluster DNS lookup (CoreDNS kubernetes plugin, kubeadm Corefile)', () => {
  it('answers a ClusterIP Service with its ClusterIP, 5 s TTL, the owner as asked', () => {
    const r = answered(ask('Front.DB.svc.cluster.local'));
    expect(r.answers).toEqual([
      { name: 'Front.DB.svc.cluster.local', ttl: 5, type: 'A', address: '10.96.0.20' },
    ]);
  });

  it('answers a headless Service with its ready endpoints, those of publishNotReadyAddresses included', () => {
    // The slice's ready condition is the controller's verdict: with publishNotReadyAddresses it
    // marks every pod ready, without it only ready pods; member-2 is marked not ready.
    expect(addressesOf('peers.db.svc.cluster.local').sort()).toEqual(['10.244.0.5', '10.244.0.6']);
  });

  it('answers an endpoint by its hostname (StatefulSet pods), or by its dashed address', () => {
    expect(addressesOf('member-0.peers.db.svc.cluster.local')).toEqual(['10.244.0.5']);
    expect(addressesOf('MEMBER-1.peers.db.svc.cluster.local')).toEqual(['10.244.0.6']);
    expect(rcodeOf('member-2.peers.db.svc.cluster.local')).toBe(RCODE.NXDOMAIN);
    // CoreDNS answers endpoint names of ClusterIP Services too; an unknown ready state counts as ready.
    expect(addressesOf('10-244-0-8.front.db.svc.cluster.local')).toEqual(['10.244.0.8']);
    expect(addressesOf('10-244-0-9.front.db.svc.cluster.local')).toEqual(['10.244.0.9']);
    expect(rcodeOf('10-244-0-5.peers.db.svc.cluster.local')).toBe(RCODE.NXDOMAIN);
  });

  it('answers AAAA for an existing name with no records (NODATA) and the SOA', () => {
    const r = answered(ask('member-0.peers.db.svc.cluster.local', TYPE.AAAA));
    expect(r.rcode).toBe(RCODE.NOERROR);
    expect(r.answers).toEqual([]);
    expect(r.authorities).toEqual([
      expect.objectContaining({
        name: 'cluster.local',
        type: 'SOA',
        mname: 'ns.dns.cluster.local',
        minimum: 5,
      }),
    ]);
    expect(rcodeOf('front.db.svc.cluster.local', TYPE.AAAA)).toBe(RCODE.NOERROR);
    expect(rcodeOf('nope.db.svc.cluster.local', TYPE.AAAA)).toBe(RCODE.NXDOMAIN);
  });

  it('answers NXDOMAIN, with the SOA, for names the cluster does not have', () => {
    for (const name of [
      'nope.db.svc.cluster.local',
      'front.nope.svc.cluster.local',
      'member-9.peers.db.svc.cluster.local',
      'front.db.nope.cluster.local',
      'a.b.c.front.db.svc.cluster.local',
      'empty.db.svc.cluster.local', // headless, no ready endpoint
      'nope.cluster.local',
    ])
      expect(rcodeOf(name), name).toBe(RCODE.NXDOMAIN);
    expect(answered(ask('nope.db.svc.cluster.local')).authorities[0]?.type).toBe('SOA');
  });

  it('answers NODATA for the names above Services: the zone, svc, pod and a namespace', () => {
    for (const name of ['cluster.local', 'svc.cluster.local', 'pod.cluster.local', 'db.svc.cluster.local'])
      expect(addressesOf(name), name).toEqual([]);
    expect(addressesOf('cluster.local', TYPE.SOA)).toEqual(['SOA']);
    expect(rcodeOf('other.svc.cluster.local')).toBe(RCODE.NXDOMAIN);
  });

  it('answers SRV for named ports: the endpoints by name for headless, the Service for ClusterIP', () => {
    const r = answered(ask('_peer._tcp.peers.db.svc.cluster.local', TYPE.SRV));
    expect(values(r.answers).sort()).toEqual([
      '2380 50 member-0.peers.db.svc.cluster.local',
      '2380 50 member-1.peers.db.svc.cluster.local',
    ]);
    expect(values(r.additionals).sort()).toEqual(['10.244.0.5', '10.244.0.6']);
    const all = answered(ask('peers.db.svc.cluster.local', TYPE.SRV));
    expect(all.answers).toHaveLength(4); // both ports of the slice, both members
    const front = answered(ask('_http._tcp.front.db.svc.cluster.local', TYPE.SRV));
    expect(values(front.answers)).toEqual(['80 100 front.db.svc.cluster.local']);
    expect(front.additionals).toEqual([
      { name: 'front.db.svc.cluster.local', ttl: 5, type: 'A', address: '10.96.0.20' },
    ]);
    expect(values(answered(ask('_dns._udp.front.db.svc.cluster.local', TYPE.SRV)).answers)).toEqual([
      '53 100 front.db.svc.cluster.local',
    ]);
    expect(rcodeOf('_http._udp.front.db.svc.cluster.local', TYPE.SRV)).toBe(RCODE.NXDOMAIN);
    expect(rcodeOf('_nope._tcp.peers.db.svc.cluster.local', TYPE.SRV)).toBe(RCODE.NXDOMAIN);
  });

  it('gives a headless Service without ports A records but no SRV', () => {
    expect(addressesOf('portless.db.svc.cluster.local')).toEqual(['10.244.0.11']);
    expect(addressesOf('only.portless.db.svc.cluster.local')).toEqual(['10.244.0.11']);
    expect(addressesOf('portless.db.svc.cluster.local', TYPE.SRV)).toEqual([]);
  });

  it('answers an ExternalName Service with a CNAME: chased upstream, or followed in the cluster', () => {
    expect(ask('ext.db.svc.cluster.local')).toEqual({
      kind: 'chase',
      cname: { name: 'ext.db.svc.cluster.local', ttl: 5, type: 'CNAME', target: 'db.example.com' },
      target: 'db.example.com',
    });
    expect(addressesOf('ext.db.svc.cluster.local', TYPE.CNAME)).toEqual(['db.example.com']);
    expect(addressesOf('alias.db.svc.cluster.local')).toEqual(['front.db.svc.cluster.local', '10.96.0.20']);
    expect(addressesOf('alias.db.svc.cluster.local', TYPE.AAAA)).toEqual([]);
    expect(rcodeOf('_http._tcp.ext.db.svc.cluster.local', TYPE.SRV)).toBe(RCODE.NXDOMAIN);
  });

  it('answers pod names by their dashed address in an existing namespace (pods insecure)', () => {
    expect(addressesOf('10-244-0-99.db.pod.cluster.local')).toEqual(['10.244.0.99']);
    expect(rcodeOf('10-244-0-99.nope.pod.cluster.local')).toBe(RCODE.NXDOMAIN);
    expect(rcodeOf('not-an-ip.db.pod.cluster.local')).toBe(RCODE.NXDOMAIN);
  });

  it('answers the schema version, and TXT elsewhere as CoreDNS does', () => {
    expect(addressesOf('dns-version.cluster.local', TYPE.TXT)).toEqual(['TXT']);
    expect(rcodeOf('front.db.svc.cluster.local', TYPE.TXT)).toBe(RCODE.NOERROR);
    expect(rcodeOf('db.svc.cluster.local', TYPE.TXT)).toBe(RCODE.NXDOMAIN);
    expect(rcodeOf('front.db.svc.cluster.local', 99)).toBe(RCODE.NOERROR);
    expect(rcodeOf('nope.db.svc.cluster.local', 99)).toBe(RCODE.NXDOMAIN);
    expect(rcodeOf('cluster.local', TYPE.AXFR)).toBe(RCODE.REFUSED);
  });

  it('answers PTR for ClusterIPs and endpoints, and leaves other addresses to the upstream', () => {
    expect(addressesOf('20.0.96.10.in-addr.arpa', TYPE.PTR)).toEqual(['front.db.svc.cluster.local']);
    expect(addressesOf('5.0.244.10.in-addr.arpa', TYPE.PTR)).toEqual(['member-0.peers.db.svc.cluster.local']);
    expect(addressesOf('8.0.244.10.in-addr.arpa', TYPE.PTR)).toEqual([
      '10-244-0-8.front.db.svc.cluster.local',
    ]);
    expect(ask('7.0.244.10.in-addr.arpa', TYPE.PTR)).toEqual({ kind: 'forward' }); // not ready
    expect(ask('1.0.0.127.in-addr.arpa', TYPE.PTR)).toEqual({ kind: 'forward' });
  });

  it('forwards names outside the cluster domain, and fails inside it until the first sync', () => {
    expect(ask('example.com')).toEqual({ kind: 'forward' });
    expect(ask('cluster.local.example.com')).toEqual({ kind: 'forward' });
    expect(ask('local')).toEqual({ kind: 'forward' });
    const unsynced = viewOf({ synced: false, namespaces: [], services: [], endpointSlices: [] });
    expect(answered(ask('front.db.svc.cluster.local', TYPE.A, unsynced)).rcode).toBe(RCODE.SERVFAIL);
  });
});
