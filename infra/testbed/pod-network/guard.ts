import { ipt, iptQuiet } from './commands.ts';

/**
 * Forwarding is on while the test bed runs; these rules make sure it only ever forwards between
 * the test bed's own pods: nothing from the bridge to another interface, nothing from another
 * interface to the bridge. Our own chain, jumped to from the top of FORWARD.
 */
export const guardChain = (prefix: string) => `${prefix.toUpperCase()}-GUARD`;

export const installGuard = async (prefix: string, bridge: string): Promise<void> => {
  const chain = guardChain(prefix);
  await removeGuard(prefix);
  await ipt(4, '-N', chain);
  await ipt(4, '-A', chain, '-i', bridge, '!', '-o', bridge, '-j', 'DROP');
  await ipt(4, '-A', chain, '!', '-i', bridge, '-o', bridge, '-j', 'DROP');
  await ipt(4, '-I', 'FORWARD', '1', '-j', chain);
};

export const removeGuard = async (prefix: string): Promise<void> => {
  const chain = guardChain(prefix);
  // -D removes one jump at a time; a killed run may have left several.
  for (let i = 0; i < 10; i++) {
    if ((await iptQuiet(4, '-D', 'FORWARD', '-j', chain)) === '' && !(await hasJump(chain))) break;
  }
  await iptQuiet(4, '-F', chain);
  await iptQuiet(4, '-X', chain);
};

const hasJump = async (chain: string) => (await iptQuiet(4, '-S', 'FORWARD')).includes(`-j ${chain}`);
