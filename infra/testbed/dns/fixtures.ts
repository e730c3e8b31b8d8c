import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { encodeMessage, type Question } from './message.ts';
import { type ClusterView, SERVICE_NAME_LABEL, viewOf } from './view.ts';

/**
 * Test fixtures: the objects the API server would hold for a StatefulSet behind a headless
 * Service with publishNotReadyAddresses (its EndpointSlice as the controller writes it: every pod
 * ready), a ClusterIP Service, ExternalName Services and a headless Service without endpoints.
 */
export const NS = 'db';

const service = (name: string, spec: V1Service['spec']): V1Service => ({
  metadata: { name, namespace: NS },
  spec,
});

const slice = (svc: string, name: string, s: Omit<V1EndpointSlice, 'addressType'>): V1EndpointSlice => ({
  addressType: 'IPv4',
  ...s,
  metadata: { name, namespace: NS, labels: { [SERVICE_NAME_LABEL]: svc } },
});

export const services: V1Service[] = [
  service('peers', {
    clusterIP: 'None',
    clusterIPs: ['None'],
    publishNotReadyAddresses: true,
    ports: [{ name: 'peer', port: 2380, protocol: 'TCP' }],
  }),
  service('front', {
    clusterIP: '10.96.0.20',
    clusterIPs: ['10.96.0.20'],
    ports: [
      { name: 'http', port: 80, protocol: 'TCP' },
      { name: 'dns', port: 53, protocol: 'UDP' },
    ],
  }),
  service('ext', { type: 'ExternalName', externalName: 'db.example.com' }),
  service('alias', { type: 'ExternalName', externalName: 'front.db.svc.cluster.local' }),
  service('empty', { clusterIP: 'None', clusterIPs: ['None'], ports: [{ name: 'x', port: 1 }] }),
  service('portless', { clusterIP: 'None', clusterIPs: ['None'] }),
];

export const endpointSlices: V1EndpointSlice[] = [
  slice('peers', 'peers-abc', {
    ports: [
      { name: 'peer', port: 2380, protocol: 'TCP' },
      { name: 'client', port: 2379, protocol: 'TCP' },
    ],
    endpoints: [
      { addresses: ['10.244.0.5'], hostname: 'member-0', conditions: { ready: true } },
      { addresses: ['10.244.0.6'], hostname: 'member-1', conditions: { ready: true } },
      { addresses: ['10.244.0.7'], hostname: 'member-2', conditions: { ready: false } },
    ],
  }),
  slice('front', 'front-abc', {
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: [{ addresses: ['10.244.0.8'], conditions: { ready: true } }, { addresses: ['10.244.0.9'] }],
  }),
  slice('empty', 'empty-abc', {
    ports: [{ name: 'x', port: 1 }],
    endpoints: [{ addresses: ['10.244.0.10'], conditions: { ready: false } }],
  }),
  slice('portless', 'portless-abc', { endpoints: [{ addresses: ['10.244.0.11'], hostname: 'only' }] }),
];

export const fixtureView = (
  extra: { services?: V1Service[]; slices?: V1EndpointSlice[] } = {},
): ClusterView =>
  viewOf({
    synced: true,
    namespaces: [NS, 'default'],
    services: [...services, ...(extra.services ?? [])],
    endpointSlices: [...endpointSlices, ...(extra.slices ?? [])],
  });

/** A query as a stub resolver sends it: RD set, optionally with EDNS. */
export const queryBytes = (
  q: Omit<Question, 'class'> & { class?: number },
  o: { id?: number; edns?: { udpSize: number; version?: number } } = {},
): Buffer =>
  encodeMessage({
    id: o.id ?? 0x1234,
    qr: false,
    opcode: 0,
    aa: false,
    tc: false,
    rd: true,
    ra: false,
    rcode: 0,
    questions: [{ class: 1, ...q }],
    answers: [],
    authorities: [],
    additionals: [],
    edns: o.edns ? { udpSize: o.edns.udpSize, version: o.edns.version ?? 0, dnssecOk: false } : undefined,
  });
