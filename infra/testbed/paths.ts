import { homedir } from 'node:os';
import { join } from 'node:path';

/** Everything the test bed builds or unpacks lives here, outside the clone, and is reused. */
export const cacheDir = (): string => process.env.TIDEWAY_CACHE ?? join(homedir(), '.cache', 'tideway');

export const binDir = (): string => join(cacheDir(), 'bin');

export const bin = (name: string): string => join(binDir(), name);

/** Prefix of every host-level thing the test bed creates (netns, bridge, iptables chains, temp dirs). */
export const TESTBED_PREFIX = 'twbed';

/** Environment marker on every child process, so a later start can find and kill leftovers. */
export const TESTBED_ENV_MARKER = 'TIDEWAY_TESTBED_ID';
