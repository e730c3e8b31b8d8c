import type { CelBlocks, CelRule } from '../api/cel-blocks.ts';
import { celDurationMs, parseDuration } from '../api/duration.ts';
import type { RedisCluster } from '../api/generated.ts';
import { LABEL } from './names.ts';
import {
  configProblems,
  DIRECTIVE_NAME,
  OWNED_DIRECTIVES,
  UNSAFE_DIRECTIVES,
  VALUE_RULES,
  type ValueRule,
  WHOLE_NUMBER,
} from './redis-conf.ts';

// What a RedisCluster may not say, in one place: the CRD's CEL rules are generated from these
// lists (`npm run gen:api` writes REDISCLUSTER_CEL into crds/rediscluster.yaml, a unit test fails
// when they differ), and specProblems() checks the same at the function's boundary.

/**
 * A cluster's name becomes the name of its Services, so it must be a DNS-1035 label (no dots,
 * starting with a letter); and at most 52 characters, since the StatefulSet controller labels
 * each pod `controller-revision-hash: <name>-<hash of up to 10 characters>`, which must fit 63.
 */
const CLUSTER_NAME = '^[a-z]([-a-z0-9]*[a-z0-9])?$';
export const CLUSTER_NAME_MAX = 52;
const NAME_FORMAT =
  "metadata.name must start with a lowercase letter and hold only lowercase letters, digits and '-' (no dots): Tideway names Services after the cluster, and a Service name is a DNS-1035 label";
const NAME_LENGTH = `metadata.name must be at most ${CLUSTER_NAME_MAX} characters: the StatefulSet's pods carry the label controller-revision-hash=<name>-<hash>, which must fit 63`;

/** Pod label and annotation keys Tideway sets: any under this prefix, and the selector labels. */
const RESERVED_KEY_PREFIX = 'tideway.dev/';
export const RESERVED_LABELS = Object.values(LABEL).filter((k) => !k.startsWith(RESERVED_KEY_PREFIX));
const LABELS_MESSAGE = `podTemplate.labels must not set ${RESERVED_KEY_PREFIX}* or ${RESERVED_LABELS.join(', ')}: Tideway sets these to select its pods and route to them (${LABEL.role} would put every new pod behind the master Service)`;
const ANNOTATIONS_MESSAGE = `podTemplate.annotations must not set ${RESERVED_KEY_PREFIX}*: Tideway sets these itself (tideway.dev/config-hash restarts pods when redis.conf changes)`;

/**
 * The shortest spec.failover.after: health probes each instance with a 1 s timeout and rechecks at
 * most 1 s apart, so 3 s means at least about three failed probes, not one.
 */
export const FAILOVER_AFTER_MIN = '3s';
const FAILOVER_MESSAGE = `failover.after must be at least ${FAILOVER_AFTER_MIN}: the master is probed with a 1 s timeout at most 1 s apart, and a shorter wait fails over on one missed probe`;

const list = (xs: readonly string[]) => `[${xs.map((x) => `'${x}'`).join(', ')}]`;

const celValue = (rule: ValueRule, v: string) =>
  rule.value.type === 'yes'
    ? `${v}.lowerAscii() == 'yes'`
    : `${v}.matches(r'${WHOLE_NUMBER}') && int(${v}) >= ${rule.value.min}${rule.value.belowReplicas ? ` && int(${v}) <= self.replicas - 1` : ''}`;

/** The generated blocks of crds/rediscluster.yaml, by marker name. */
export const REDISCLUSTER_CEL = {
  // At creation only (a name never changes): an object made before these rules must still take
  // updates, or Tideway could not even remove its finalizer.
  root: [
    {
      rule: `oldSelf.hasValue() || self.metadata.name.matches(r'${CLUSTER_NAME}')`,
      message: NAME_FORMAT,
      optionalOldSelf: true,
    },
    {
      rule: `oldSelf.hasValue() || self.metadata.name.size() <= ${CLUSTER_NAME_MAX}`,
      message: NAME_LENGTH,
      optionalOldSelf: true,
    },
  ],
  // Value rules sit on spec: min-replicas-to-write is bounded by spec.replicas.
  spec: VALUE_RULES.map(
    (r): CelRule => ({
      rule: `!has(self.config) || self.config.all(k, !(k.lowerAscii() in ${list(r.directives)}) || (${celValue(r, 'self.config[k]')}))`,
      message: r.message,
      fieldPath: '.config',
    }),
  ),
  config: [
    {
      rule: `self.all(k, k.matches(r'${DIRECTIVE_NAME}') && !self[k].contains('\\n') && !self[k].contains('\\r'))`,
      message:
        "config keys must be redis.conf directive names (a letter, then letters, digits and '-') and each value a single line",
    },
    {
      rule: `self.all(k, !(k.lowerAscii() in ${list(OWNED_DIRECTIVES)}))`,
      message: `config must not set directives Tideway owns: ${OWNED_DIRECTIVES.join(', ')}. Remove them: Tideway sets these itself.`,
    },
    {
      rule: `self.all(k, !(k.lowerAscii() in ${list(UNSAFE_DIRECTIVES)}))`,
      message: `config must not set ${UNSAFE_DIRECTIVES.join(', ')}: they would let whoever edits the cluster run code on its servers or reach their disks`,
    },
  ],
  podLabels: [
    {
      rule: `self.all(k, !k.startsWith('${RESERVED_KEY_PREFIX}') && !(k in ${list(RESERVED_LABELS)}))`,
      message: LABELS_MESSAGE,
    },
  ],
  podAnnotations: [
    { rule: `self.all(k, !k.startsWith('${RESERVED_KEY_PREFIX}'))`, message: ANNOTATIONS_MESSAGE },
  ],
  failoverAfter: [
    { rule: `${celDurationMs('self')} >= ${parseDuration(FAILOVER_AFTER_MIN)}.0`, message: FAILOVER_MESSAGE },
  ],
} as const satisfies CelBlocks;

/**
 * What the API server's rules refuse in a RedisCluster, checked again where a function reads it
 * (an object admitted before a rule existed, or a CRD not yet updated): each problem says what
 * to fix; empty when nothing is wrong.
 */
export const specProblems = (rc: Pick<RedisCluster, 'metadata' | 'spec'>): string[] => {
  const problems: string[] = [];
  const name = rc.metadata.name ?? '';
  if (!new RegExp(CLUSTER_NAME).test(name)) problems.push(NAME_FORMAT);
  if (name.length > CLUSTER_NAME_MAX) problems.push(NAME_LENGTH);
  problems.push(...configProblems(rc.spec.config ?? {}, rc.spec.replicas));
  const pt = rc.spec.podTemplate ?? {};
  const reserved = (k: string) => k.startsWith(RESERVED_KEY_PREFIX);
  if (Object.keys(pt.labels ?? {}).some((k) => reserved(k) || RESERVED_LABELS.includes(k as never)))
    problems.push(LABELS_MESSAGE);
  if (Object.keys(pt.annotations ?? {}).some(reserved)) problems.push(ANNOTATIONS_MESSAGE);
  const after = rc.spec.failover?.after;
  if (after !== undefined && !(durationMs(after) >= parseDuration(FAILOVER_AFTER_MIN)))
    problems.push(FAILOVER_MESSAGE);
  return problems;
};

const durationMs = (text: string) => {
  try {
    return parseDuration(text);
  } catch {
    return Number.NaN;
  }
};
