import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { type EtcdCluster, EtcdClusterSpecDefaults } from '../api/generated.ts';
import type { EtcdClient } from '../etcd/client.ts';
import { createEtcdClient } from '../etcd/gateway-client.ts';
import type { EtcdTls } from '../etcd/http.ts';
import { memberIdToHex } from '../etcd/ids.ts';
import type { EndpointStatus } from '../etcd/types.ts';
import { joinOf, memberOf } from './desired.ts';
import { listMemberPods, listMemberVolumes } from './kube.ts';
import { imageOf, endpointOf as memberEndpoint, memberOfPeerURL, namesOf, ordinalOf } from './names.ts';
import type { ForeignMember, MemberState, Observed, PodState } from './plan.ts';
import { podTemplateOf, TEMPLATE_ANNOTATION } from './template.ts';

/**
 * The leader as the members see it: the claim of the highest term (a cut-off old leader may still
 * claim its own, older one).
 */
export const leaderOf = (statuses: readonly EndpointStatus[]): string | undefined =>
  [...statuses].filter((s) => s.leader !== undefined).sort((a, b) => b.raftTerm - a.raftTerm)[0]?.leader;

/**
 * An answer is this cluster's when its cluster id (decimal, as etcd sends it) is the one recorded
 * (hex), or none is recorded yet: a member started on an earlier cluster's data is another cluster.
 */
export const sameCluster = (recordedHex: string | undefined, answerId: string) =>
  !recordedHex || memberIdToHex(answerId) === recordedHex;

/** What a run saw: the planner's input, and what status is written from. */
/**
 * etcd's member list split into this cluster's members — named by their peer URL (Tideway's
 * naming; a started member's own name must agree) — and any other.
 */
export const splitMembers = (
  c: Pick<EtcdCluster, 'metadata' | 'spec'>,
  list: readonly { id: string; name: string; peerURLs: readonly string[]; isLearner: boolean }[],
): { members: MemberState[]; foreign: ForeignMember[] } => {
  const members: MemberState[] = [];
  const foreign: ForeignMember[] = [];
  for (const m of list) {
    const byUrl = m.peerURLs.map((u) => memberOfPeerURL(c, u)).find(Boolean);
    // Tideway names its members <prefix>-<n>: another name under its peer domain is someone else's.
    if (byUrl && ordinalOf(namesOf(c).memberPrefix, byUrl) >= 0 && (m.name === '' || m.name === byUrl))
      members.push({ id: m.id, name: byUrl, learner: m.isLearner, started: m.name !== '' });
    else foreign.push({ id: m.id, name: m.name, peerURLs: [...m.peerURLs] });
  }
  return { members, foreign };
};

export type Seen = {
  observed: Observed;
  pods: V1Pod[];
  /** Each member pod's status answer, by member name. */
  statuses: Map<string, EndpointStatus>;
  clusterId: string | undefined;
  /** Active alarms (NOSPACE, CORRUPT) by member name; undefined when none answered. */
  alarms: { member: string; alarm: string }[] | undefined;
};

const CALL_MS = 3000;

/** A client on the pods' IPs: the functions need not resolve cluster DNS (they may run outside it). */
const clientFor = (c: EtcdCluster, pods: readonly V1Pod[], tls?: EtcdTls): EtcdClient | undefined => {
  const endpointOf = (p: V1Pod) => (p.status?.podIP ? memberEndpoint(c, p.status.podIP) : undefined);
  // Not an ended pod's: its address may be another pod's by now.
  const endpoints = pods
    .filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running')
    .flatMap((p) => endpointOf(p) ?? []);
  return endpoints.length > 0 ? createEtcdClient({ endpoints, ...(tls ? { tls } : {}) }) : undefined;
};

/**
 * Pods, volumes and the member list as they are now. The member list is read linearizably (through
 * the leader): a member cut off from the others must not make the run forget a recent member.
 */
export const observe = async (
  kc: KubeConfig,
  c: EtcdCluster,
  signal: AbortSignal,
  /** With spec.tls: the client certificate and the CA and name to verify members by. */
  tls?: EtcdTls,
): Promise<Seen & { client: EtcdClient | undefined }> => {
  const [pods, { ours: volumes, foreign }] = await Promise.all([
    listMemberPods(kc, c),
    listMemberVolumes(kc, c),
  ]);
  const same = (clusterId: string) => sameCluster(c.status?.clusterID, clusterId);
  const client = clientFor(c, pods, tls);
  const statuses = new Map<string, EndpointStatus>();
  let members: MemberState[] | undefined;
  let foreignMembers: ForeignMember[] = [];
  let clusterId: string | undefined;
  let alarms: Seen['alarms'];
  if (client) {
    await Promise.all(
      pods.map(async (p) => {
        const endpoint = p.status?.podIP ? memberEndpoint(c, p.status.podIP) : undefined;
        const member = memberOf(p);
        if (!endpoint || !member || p.metadata?.deletionTimestamp) return;
        const s = await client.status(endpoint, { signal, timeoutMs: CALL_MS }).catch(() => undefined);
        if (s && same(s.header.clusterId)) statuses.set(member, s);
      }),
    );
    const list = await client
      .memberList({ signal, timeoutMs: CALL_MS, linearizable: true })
      .catch(() => undefined);
    if (list && same(list.header.clusterId)) {
      const byId = new Map(list.members.map((m) => [m.id, m.name]));
      alarms = await client
        .alarmList({ signal, timeoutMs: CALL_MS })
        .then((a) => a.map((x) => ({ member: byId.get(x.memberId) || x.memberId, alarm: x.alarm })))
        .catch(() => undefined);
      clusterId = list.header.clusterId;
      ({ members, foreign: foreignMembers } = splitMembers(c, list.members));
    }
  }
  const leader = leaderOf([...statuses.values()]);
  const podStates: PodState[] = pods.flatMap((p) => {
    const member = memberOf(p);
    if (!member) return [];
    return [
      {
        member,
        healthy: statuses.has(member) && (statuses.get(member)?.leader ?? undefined) !== undefined,
        deleting: !!p.metadata?.deletionTimestamp,
        ended: p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded',
        ready: p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') ?? false,
        image: p.spec?.containers?.[0]?.image ?? '',
        template: p.metadata?.annotations?.[TEMPLATE_ANNOTATION],
        join: joinOf(p),
      },
    ];
  });
  const recorded = (c.status?.members ?? []).flatMap((m) => (m.name ? [m.name] : []));
  const bootstrapped = !!c.status?.clusterID;
  const observed: Observed = {
    memberPrefix: namesOf(c).memberPrefix,
    size: c.spec.size ?? EtcdClusterSpecDefaults.size,
    image: imageOf(c),
    template: podTemplateOf(c),
    bootstrapped,
    ...(c.spec.bootstrap?.fromBackup ? { bootstrapSize: 1 } : {}),
    bootstrapMembers: bootstrapped ? [] : recorded,
    members,
    lastKnown: recorded,
    leader,
    pods: podStates,
    volumes: volumes.filter((v) => !v.metadata?.deletionTimestamp).flatMap((v) => memberOf(v) ?? []),
    volumesDeleting: volumes.filter((v) => !!v.metadata?.deletionTimestamp).flatMap((v) => memberOf(v) ?? []),
    foreignVolumes: foreign.flatMap((v) => memberOf(v) ?? []),
    foreignMembers,
    alarms: (alarms ?? []).map((a) => `${a.alarm} on ${a.member}`),
  };
  return { observed, pods, statuses, clusterId, alarms, client };
};
