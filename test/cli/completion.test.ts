import { execFileSync } from 'node:child_process';
import { delimiter, dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  COMMANDS,
  type CommandPath,
  type Flag,
  GLOBAL_FLAGS,
  OPTIONS,
  SHELLS,
  SUBCOMMANDS,
} from '../../cli/args.ts';
import { backups } from '../backup/support/backups.ts';
import { bed, createNamespace } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { redisClusters } from '../support/redis.ts';
import { bashCompletions, TIDEWAY, zshCompletions } from './support.ts';

const PATHS = Object.keys(COMMANDS) as CommandPath[];
const spellings = (f: Flag) => [`--${f}`, ...('short' in OPTIONS[f] ? [`-${OPTIONS[f].short}`] : [])];

/**
 * Shell completion as a user gets it: `tideway completion bash|zsh` loaded into a real bash and a
 * real interactive zsh (compsys), names read by the bed's kubectl from the API server. Both shells
 * offer the same: every command, every flag the parser takes, flag values, and the cluster and
 * backup names of the namespace given on the line.
 */
describe('tideway completion', () => {
  const b = bed();
  let ns = '';
  let other = '';
  const env = () => ({
    ...process.env,
    KUBECONFIG: b.info.kubeconfig,
    PATH: `${dirname(b.info.kubectl)}${delimiter}${process.env.PATH ?? ''}`,
  });

  beforeAll(async () => {
    try {
      execFileSync('zsh', ['--version']);
    } catch (e) {
      throw new Error(
        `these tests run a real zsh, which is not installed here (Debian: apt-get install zsh)`,
        {
          cause: e,
        },
      );
    }
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'cli-completion');
    other = await createNamespace(b.core, 'cli-completion');
    // Objects only: completion reads names; nothing runs them in these namespaces.
    for (const name of ['alpha', 'beta'])
      await redisClusters(b, () => ns).apply(name, { version: '7.0', replicas: 1 });
    await redisClusters(b, () => other).apply('gamma', { version: '7.0', replicas: 1 });
    for (const name of ['b1', 'nightly'])
      await backups(b, () => ns).create(name, { cluster: { name: 'alpha' } });
    await backups(b, () => other).create('elsewhere', { cluster: { name: 'gamma' } });
  });

  afterAll(async () => {
    for (const n of [ns, other]) await b.core.deleteNamespace({ name: n }).catch(() => undefined);
  });

  /** Command lines and what each shell must offer for them (sorted). */
  const cases = (): [string, string[]][] => [
    ['tideway ', [...SUBCOMMANDS].sort()],
    ['tideway re', ['restore']],
    ['tideway backup ', ['now']],
    ...PATHS.map((p): [string, string[]] => [
      `tideway ${p}${COMMANDS[p].arg ? ' x' : ''} -`,
      [...COMMANDS[p].flags, ...GLOBAL_FLAGS].flatMap(spellings).sort(),
    ]),
    ['tideway completion ', [...SHELLS]],
    ['tideway status x -o ', ['json', 'text']],
    ['tideway backup now -n ', expect.arrayContaining([ns, other, 'default']) as unknown as string[]],
    [`tideway status -n ${ns} `, ['alpha', 'beta']],
    [`tideway restore -n ${other} `, ['gamma']],
    [`tideway restore --namespace ${ns} alpha --backup `, ['b1', 'nightly']],
    [`tideway restore -n ${other} gamma --backup `, ['elsewhere']],
    [`tideway restore -n ${ns} alpha --backup n`, ['nightly']],
  ];

  it('the scripts are valid bash and zsh (bash -n, zsh -n)', () => {
    for (const shell of SHELLS) {
      const script = execFileSync(TIDEWAY, ['completion', shell], { encoding: 'utf8', env: env() });
      expect(() =>
        execFileSync(shell, shell === 'zsh' ? ['-f', '-n'] : ['-n'], { input: script }),
      ).not.toThrow();
    }
  });

  it('zsh, sourced after compinit: commands, every flag of each, values, names from the namespace on the line', async () => {
    const c = cases();
    const got = await zshCompletions(
      [...c.map(([line]) => line), `tideway restore --namespace=${ns} alpha --backup=`],
      env(),
      'source',
    );
    c.forEach(([line, want], i) => {
      expect(got[i], line).toEqual(want);
    });
    expect(got.at(-1)).toEqual(['b1', 'nightly']);
  });

  it('zsh, from $fpath (#compdef): the same script is found by compinit', async () => {
    const got = await zshCompletions(['tideway ', `tideway status -n ${ns} `], env(), 'fpath');
    expect(got).toEqual([[...SUBCOMMANDS].sort(), ['alpha', 'beta']]);
  });

  it('bash offers the same', async () => {
    const c = cases();
    const got = await bashCompletions(
      [...c.map(([line]) => line), `tideway restore --namespace = ${ns} alpha --backup = `],
      env(),
    );
    c.forEach(([line, want], i) => {
      expect(got[i], line).toEqual(want);
    });
    expect(got.at(-1)).toEqual(['b1', 'nightly']);
  });
});
