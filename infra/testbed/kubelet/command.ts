import type { ImageEntry } from '../node-agent/types.ts';

/**
 * Kubernetes' $(VAR) expansion in command, args and env values: defined variables are replaced,
 * $$ escapes a dollar, undefined references stay as written.
 */
export const expand = (s: string, env: Readonly<Record<string, string>>): string =>
  s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) =>
    m === '$$' ? '$' : name !== undefined && name in env ? (env[name] as string) : m,
  );

/**
 * Docker semantics: `command` replaces the image's entrypoint, `args` its default command. The
 * image table's programs are on PATH first (/tideway/bin inside the container).
 */
export const resolveArgv = (
  image: ImageEntry,
  command: readonly string[] | undefined,
  args: readonly string[] | undefined,
  env: Readonly<Record<string, string>>,
): string[] => {
  let argv: string[];
  if (command?.length) argv = [...command, ...(args ?? [])];
  else if (args?.length) argv = args[0]?.startsWith('-') ? [...image.defaultCommand, ...args] : [...args];
  else argv = [...image.defaultCommand];
  const expanded = argv.map((a) => expand(a, env));
  return command?.length || !image.entrypoint ? expanded : image.entrypoint(expanded);
};
