import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the locally made base image holds besides Node: the Debian packages of the C libraries
 * the official Node binary links against (`ldd node`: libc, libm, libdl, libpthread → libc6;
 * libstdc++ → libstdc++6; libgcc_s → libgcc-s1). Nothing else: Node carries its own root CAs
 * and, with full ICU, its own time-zone data. Versions are Debian's current candidates (security
 * updates replace old ones on the mirror), recorded in the base's key when resolved.
 */
export const BASE_DEBS = ['libc6', 'libgcc-s1', 'libstdc++6'] as const;

/**
 * The npm registry's integrity of each Node build the base is made from, checked after the
 * download (`npm view node-linux-<arch>@<version> dist.integrity`). Bumping NODE_VERSION in
 * scripts/node24.sh needs a line here; the build says so.
 */
export const NODE_INTEGRITY: Readonly<Record<string, Readonly<Record<NodeArch, string>>>> = {
  '24.21.0': {
    x64: 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==',
    arm64: 'sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==',
  },
};

export type NodeArch = 'x64' | 'arm64';

/** The architecture names of Node, Debian and OCI for this machine. */
export const archOf = (machine = process.arch): { node: NodeArch; debian: string; oci: string } => {
  if (machine === 'x64') return { node: 'x64', debian: 'amd64', oci: 'amd64' };
  if (machine === 'arm64') return { node: 'arm64', debian: 'arm64', oci: 'arm64' };
  throw new Error(`no base image recipe for ${machine}; Node builds exist for x64 and arm64`);
};

/** The Node version every script runs on (scripts/node24.sh): the image runs the same one. */
export const nodeVersionOf = (root: string): string => {
  const script = readFileSync(join(root, 'scripts', 'node24.sh'), 'utf8');
  const m = /^NODE_VERSION=(\d+\.\d+\.\d+)$/m.exec(script);
  if (!m?.[1]) throw new Error(`${join(root, 'scripts', 'node24.sh')} sets no NODE_VERSION=x.y.z`);
  return m[1];
};

/** The pinned integrity of a Node build, or an error that says how to add it. */
export const nodeIntegrityOf = (version: string, arch: NodeArch): string => {
  const pin = NODE_INTEGRITY[version]?.[arch];
  if (!pin)
    throw new Error(
      `no integrity pin for node-linux-${arch}@${version} in scripts/image/pins.ts; add the output of ` +
        `\`npm view node-linux-${arch}@${version} dist.integrity\``,
    );
  return pin;
};

/** The user the image runs as: numeric (Kubernetes' runAsNonRoot checks it), not root, no login. */
export const IMAGE_UID = 65532;
