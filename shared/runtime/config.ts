import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { z } from 'zod';
import { TYPE_PREFIX } from '../events/types.ts';

/**
 * serverless.yml in the Serverless Framework's own shape (service, provider, functions.<name>
 * with handler and events), so anyone who knows that format can read it. Tideway-specific knobs
 * sit under each function's `tideway:` key; the event source is `cloudevent`.
 */
const zTypePattern = z
  .string()
  .regex(
    /^dev\.tideway\.[a-z]+\.([a-z]+|\*)$/,
    `a Tideway event type like ${TYPE_PREFIX}resource.updated, or ${TYPE_PREFIX}resource.*`,
  );

const zEvent = z.strictObject({
  cloudevent: z.strictObject({
    type: zTypePattern,
    /** Only events about this kind (the `kind` extension). */
    kind: z
      .string()
      .regex(/^[A-Z][A-Za-z0-9]*$/, 'a Kubernetes kind like RedisCluster')
      .optional(),
  }),
});

const zDuration = z.union([
  z.number().int().nonnegative(),
  z.string().regex(/^\d+(ms|s|m)$/, 'like 500ms, 5s or 2m'),
]);

export const toMs = (d: number | string): number => {
  if (typeof d === 'number') return d;
  const n = Number.parseInt(d, 10);
  return d.endsWith('ms') ? n : d.endsWith('s') ? n * 1000 : n * 60_000;
};

const zFunction = z.strictObject({
  /** `path/to/module.export`, relative to serverless.yml, as in the Serverless Framework. */
  handler: z.string().regex(/^[\w./-]+\.[A-Za-z_$][\w$]*$/, 'path/to/module.exportName'),
  description: z.string().optional(),
  /** Seconds a handler may run before it is cancelled and retried. */
  timeout: z.number().int().min(1).max(3600).default(60),
  /**
   * MiB for one process, as in the Serverless Framework. Node's heap otherwise grows lazily to a
   * share of the machine's memory; with it, half of this is the heap limit (the rest is code,
   * buffers and native memory), so garbage is collected early and a leak fails fast.
   */
  memorySize: z.number().int().min(128).max(16_384).optional(),
  /** Handlers running at once in one replica. */
  reservedConcurrency: z.number().int().min(1).max(1000).default(8),
  /** Deliveries before a failure is final (then: condition, Event, term; never a silent drop). */
  maximumRetryAttempts: z.number().int().min(1).max(1000).default(10),
  environment: z.record(z.string(), z.string()).default({}),
  events: z.array(zEvent).default([]),
  tideway: z
    .strictObject({
      /** A long-running process (the watcher) instead of an event handler. */
      service: z.boolean().default(false),
      /** Processes `tideway run` starts for this function. */
      replicas: z.number().int().min(1).max(16).default(1),
      /** First retry delay; doubles per attempt up to maxDelay, with jitter. */
      initialDelay: zDuration.default('1s'),
      maxDelay: zDuration.default('2m'),
      /**
       * How long the bus waits on a delivery nobody settles or extends before it redelivers it
       * (the process died). Running handlers extend theirs every third of it. Default: the
       * timeout, at least 30s and at most 2m.
       */
      ackWait: zDuration.refine((d) => toMs(d) >= 1000, 'at least 1s').optional(),
      /** Condition set False (with the error's reason) on the object when the function fails for good. */
      failureCondition: z
        .string()
        .regex(/^[A-Z][A-Za-z]*$/)
        .default('Reconciled'),
      /**
       * The kinds the failure condition is written on: the function's own objects. An event of
       * another kind that it handles for one of them (an outcome) fails with a Warning Event
       * only: the function may not write that kind's status. Unset: every kind.
       */
      failureKinds: z.array(z.string().regex(/^[A-Z][A-Za-z0-9]*$/, 'a Kubernetes kind')).optional(),
      /**
       * Who the function must be before it acts: `own` (its own ServiceAccount, not cluster-admin;
       * shared/runtime/identity.ts) for every product function; `any` only for test and bench
       * fixtures that run with the test bed's admin kubeconfig.
       */
      identity: z.enum(['own', 'any']).default('own'),
    })
    .prefault({}),
});

export const zServerless = z.object({
  service: z.string().min(1),
  frameworkVersion: z.string().optional(),
  provider: z.object({
    name: z.string(),
    runtime: z.string().optional(),
    environment: z.record(z.string(), z.string()).default({}),
  }),
  functions: z.record(z.string().regex(/^[a-z][a-z0-9-]*$/, 'lower-case function names'), zFunction),
});

export type ServerlessConfig = z.infer<typeof zServerless>;
export type FunctionConfig = z.infer<typeof zFunction>;

/** The bus's ack wait for a function's deliveries, in ms (see tideway.ackWait). */
export const ackWaitMsOf = (fn: Pick<FunctionConfig, 'timeout' | 'tideway'>): number =>
  fn.tideway.ackWait !== undefined
    ? toMs(fn.tideway.ackWait)
    : Math.max(30_000, Math.min(fn.timeout * 1000, 120_000));

/**
 * Node flags a function's processes start with (see memorySize): half of it for the heap, and a
 * 64th for each semi-space (4 MiB at 256, 16 at 1 GiB, at most 16): the young generation's pages
 * count in the pod's memory like any other, and the data paths keep their bytes off the heap, so
 * a larger one buys no speed (docs/backup.md measured 16 against 8 and 4).
 */
export const nodeArgsFor = (fn: Pick<FunctionConfig, 'memorySize'>): string[] =>
  fn.memorySize
    ? [
        `--max-old-space-size=${Math.floor(fn.memorySize / 2)}`,
        `--max-semi-space-size=${Math.max(1, Math.min(16, Math.floor(fn.memorySize / 64)))}`,
      ]
    : [];

/** serverless.yml is wrong; the message names the file, the path and what to fix. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly retry = false;
}

export const parseServerless = (text: string, file = 'serverless.yml'): ServerlessConfig => {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (error) {
    throw new ConfigError(`${file}: not valid YAML: ${(error as Error).message}`);
  }
  const result = zServerless.safeParse(raw);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new ConfigError(`${file} is invalid:\n${problems.join('\n')}`);
  }
  for (const [name, fn] of Object.entries(result.data.functions)) {
    if (!fn.tideway.service && fn.events.length === 0) {
      throw new ConfigError(
        `${file}: function ${name} has no events; give it cloudevent events or set tideway.service: true`,
      );
    }
  }
  return result.data;
};

export const loadServerless = async (file: string): Promise<ServerlessConfig> =>
  parseServerless(await readFile(file, 'utf8'), file);
