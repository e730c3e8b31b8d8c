import type { TestProject } from 'vitest/node';
import { startTestbed } from '../infra/testbed/testbed.ts';
import type { Testbed, TestbedInfo } from '../infra/testbed/types.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    testbed: TestbedInfo;
  }
}

let bed: Testbed | undefined;

/** One test bed for the whole e2e run; tests reach it through inject('testbed'). */
export const setup = async (project: TestProject) => {
  bed = await startTestbed({ log: (m) => process.stderr.write(`${m}\n`) });
  const { faults: _faults, stop: _stop, ...info } = bed;
  project.provide('testbed', info);
};

export const teardown = async () => {
  await bed?.stop();
};
