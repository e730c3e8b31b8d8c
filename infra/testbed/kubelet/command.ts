/**
 * Kubernetes' $(VAR) expansion in command, args and env values: defined variables are replaced,
 * $$ escapes a dollar, undefined references stay as written.
 */
export const expand = (s: string, env: Readonly<Record<string, string>>): string =>
  s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) =>
    m === '$$' ? '$' : name !== undefined && name in env ? (env[name] as string) : m,
  );

/**
 * Where a container's argv comes from when the pod does not say: the image's ENTRYPOINT and CMD.
 * An image of the image table has no real ENTRYPOINT, so it stands in for the image's entrypoint
 * script as a function of the arguments (e.g. the redis image's adding `--protected-mode no`).
 */
export type ImageCommand = {
  readonly entrypoint: readonly string[] | ((argv: readonly string[]) => string[]);
  readonly cmd: readonly string[];
};

/**
 * kubelet's rule: `command` replaces the ENTRYPOINT and drops CMD; `args` replace CMD. $(VAR) is
 * expanded in the pod's command and args only (with the pod's variables, not the image's), never
 * in the image's own. An empty result is left for the caller to refuse.
 */
export const resolveArgv = (
  image: ImageCommand,
  command: readonly string[] | undefined,
  args: readonly string[] | undefined,
  env: Readonly<Record<string, string>>,
): string[] => {
  const podArgs = args?.length ? args.map((a) => expand(a, env)) : undefined;
  if (command?.length) return [...command.map((c) => expand(c, env)), ...(podArgs ?? [])];
  const rest = podArgs ?? [...image.cmd];
  return typeof image.entrypoint === 'function' ? image.entrypoint(rest) : [...image.entrypoint, ...rest];
};
