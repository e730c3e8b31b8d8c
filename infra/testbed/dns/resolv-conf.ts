/** A resolv.conf as kubelet reads the node's: nameservers, search domains and options. */
export type ResolvConf = {
  readonly nameservers: readonly string[];
  readonly searches: readonly string[];
  /** As written: `ndots:5`, `edns0`. */
  readonly options: readonly string[];
};

/**
 * Parses resolv.conf the way kubelet does (pkg/kubelet/network/dns): `nameserver` lines
 * accumulate, the last `search` and the last `options` line win, a search domain loses its
 * trailing dot, `#` lines are comments, anything else (`domain`, `sortlist`) is ignored.
 */
export const parseResolvConf = (text: string): ResolvConf => {
  const nameservers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const [key, ...fields] = trimmed.split(/\s+/);
    if (key === 'nameserver' && fields[0]) nameservers.push(fields[0]);
    if (key === 'search') searches = fields.map((s) => s.replace(/\.$/, ''));
    if (key === 'options') options = fields;
  }
  return { nameservers, searches, options };
};

/** Written as containerd writes a pod's resolv.conf: search, then nameservers, then options. */
export const formatResolvConf = (c: ResolvConf): string =>
  [
    ...(c.searches.length > 0 ? [`search ${c.searches.join(' ')}`] : []),
    ...c.nameservers.map((n) => `nameserver ${n}`),
    ...(c.options.length > 0 ? [`options ${c.options.join(' ')}`] : []),
  ]
    .map((line) => `${line}\n`)
    .join('');
