/**
 * values.schema.json: helm refuses values it does not describe (a misspelt key is an error, not a
 * silent default), and `functions` accepts exactly the functions of serverless.yml.
 */
type Schema = Record<string, unknown>;

const obj = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({
  type: 'object',
  additionalProperties: false,
  properties,
  ...extra,
});
const str = (description?: string, extra: Schema = {}): Schema => ({
  type: 'string',
  ...(description ? { description } : {}),
  ...extra,
});
const int = (minimum: number, description?: string): Schema => ({
  type: 'integer',
  minimum,
  ...(description ? { description } : {}),
});
const bool = (description?: string): Schema => ({ type: 'boolean', ...(description ? { description } : {}) });
/** Passed to Kubernetes as it is (the API server checks it). */
const anyObject = (description: string): Schema => ({ type: 'object', description });
const anyList = (description: string): Schema => ({ type: 'array', description });

const quantity = str('a Kubernetes quantity, like 50m or 1', { pattern: '^[0-9]+(\\.[0-9]+)?m?$' });

const functionOverrides = obj({
  enabled: bool('false: no Deployment, ServiceAccount or roles for this function'),
  replicas: int(0, 'replicas without KEDA (default: serverless.yml tideway.replicas)'),
  resources: anyObject(
    'in place of those made from serverless.yml memorySize (set NODE_OPTIONS in env to match)',
  ),
  env: anyList('more environment variables (EnvVar objects), after the chart-wide env'),
  terminationGracePeriodSeconds: int(0, 'default: the function timeout plus a margin'),
  podAnnotations: anyObject('annotations of this function’s pods'),
  nodeSelector: anyObject('in place of the chart-wide nodeSelector'),
  tolerations: anyList('in place of the chart-wide tolerations'),
  affinity: anyObject('in place of the chart-wide affinity'),
  keda: obj({
    minReplicaCount: int(0, 'default 0: no pod while no event waits'),
    maxReplicaCount: int(1, 'default: serverless.yml tideway.replicas'),
    lagThreshold: int(1, 'events waiting per replica (default: reservedConcurrency)'),
  }),
});

export const valuesSchema = (functions: readonly string[]): Schema => ({
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Tideway chart values',
  ...obj({
    image: obj({
      repository: str('the one image that runs every function', { minLength: 1 }),
      tag: str('default: the chart’s appVersion'),
      digest: str('sha256:<manifest digest>; wins over tag', { pattern: '^$|^sha256:[0-9a-f]{64}$' }),
      pullPolicy: { type: 'string', enum: ['Always', 'IfNotPresent', 'Never'] },
    }),
    imagePullSecrets: anyList('LocalObjectReference objects'),
    command: { type: 'array', items: { type: 'string' } },
    args: {
      type: 'array',
      items: { type: 'string' },
      minItems: 1,
      description: 'the container arguments; $(TIDEWAY_FUNCTION) is the function’s name',
    },
    nats: obj(
      {
        url: str('NATS client URL (NATS_URL)', { pattern: '^$|^(nats|tls|ws|wss)://' }),
        existingSecret: obj({
          name: str('a Secret whose key holds NATS_URL; empty: nats.url'),
          key: str(undefined, { minLength: 1 }),
        }),
        replicas: {
          type: 'integer',
          enum: [1, 3, 5],
          description:
            'copies JetStream keeps of the stream, the locks and the cursor (TIDEWAY_NATS_REPLICAS): 3 on a three-server cluster',
        },
      },
      {
        // Functions without a bus would wait for it forever: say so at install instead.
        anyOf: [
          { required: ['url'], properties: { url: { minLength: 1 } } },
          {
            required: ['existingSecret'],
            properties: { existingSecret: { required: ['name'], properties: { name: { minLength: 1 } } } },
          },
        ],
      },
    ),
    watchNamespaces: {
      type: 'array',
      uniqueItems: true,
      description: 'namespaces served; empty: all',
      // A served namespace names its functions' Services (tideway-webhook-ns-<namespace>), which
      // are DNS labels of 63 characters at most.
      items: str(undefined, { pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 44 }),
    },
    keda: obj({
      enabled: bool('a ScaledObject per event function (KEDA’s CRDs must be installed)'),
      pollingInterval: int(1),
      cooldownPeriod: int(0),
      initialCooldownPeriod: int(0),
      lagEndpoint: str('base URL of the /lag endpoint KEDA reads; empty: the watcher’s ops Service', {
        pattern: '^$|^https?://[^/?#]+$',
      }),
    }),
    podDisruptionBudget: obj({ enabled: bool(), maxUnavailable: int(1) }),
    service: obj({
      type: { type: 'string', enum: ['ClusterIP', 'NodePort', 'LoadBalancer'] },
      port: { ...int(1), maximum: 65_535 },
      annotations: anyObject('annotations of the Service of each function that serves HTTP'),
    }),
    logLevel: { type: 'string', enum: ['debug', 'info', 'warn', 'error'] },
    clusterId: str('the id in CloudEvents’ source; default: the kube-system namespace’s uid'),
    clusterDomain: str('the cluster’s DNS domain, named in generated etcd certificates'),
    resources: obj({
      cpuRequest: quantity,
      defaultMemoryMiB: { ...int(64, 'for a function without memorySize'), maximum: 16_384 },
    }),
    podSecurityContext: anyObject('the pods’ securityContext'),
    securityContext: anyObject('the containers’ securityContext'),
    podAnnotations: anyObject('annotations of every pod'),
    podLabels: anyObject('labels of every pod'),
    env: anyList('environment variables (EnvVar objects) of every function'),
    nodeSelector: anyObject('for every pod'),
    tolerations: anyList('for every pod'),
    affinity: anyObject('for every pod'),
    topologySpreadConstraints: anyList('for every pod, as given'),
    priorityClassName: str(),
    functions: obj(Object.fromEntries(functions.map((f) => [f, { $ref: '#/definitions/function' }])), {
      description: 'per function, overrides of what serverless.yml says',
    }),
  }),
  // KEDA reads the lag from the watcher's Service unless told where else: without either it never
  // scales. (The templates fail too, but helm lint only reports a template's fail as INFO.)
  if: {
    required: ['keda', 'functions'],
    properties: {
      keda: { required: ['enabled'], properties: { enabled: { const: true } } },
      functions: {
        required: ['watcher'],
        properties: { watcher: { required: ['enabled'], properties: { enabled: { const: false } } } },
      },
    },
  },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then; this object is never awaited
  then: {
    properties: { keda: { required: ['lagEndpoint'], properties: { lagEndpoint: { minLength: 1 } } } },
  },
  definitions: { function: functionOverrides },
});
