import type { ManagedProcess } from './managed-process.ts';

/**
 * A restartable server of the test bed, for fault tests: kill it (SIGKILL, like a crash), stop
 * it (graceful), start it again with the same ports and data.
 */
export type Component = {
  readonly name: string;
  readonly pid: () => number | undefined;
  readonly running: () => boolean;
  start(): Promise<void>;
  /** SIGTERM, then SIGKILL after graceMs (the process's default: 10 s). */
  stop(graceMs?: number): Promise<void>;
  kill(): Promise<void>;
  restart(): Promise<void>;
};

export const component = (name: string, launch: () => Promise<ManagedProcess>): Component => {
  let current: ManagedProcess | undefined;
  const self: Component = {
    name,
    pid: () => current?.pid,
    running: () => current?.running() ?? false,
    start: async () => {
      if (current?.running()) return;
      current = await launch();
    },
    stop: async (graceMs?: number) => {
      await current?.stop(graceMs);
    },
    kill: async () => {
      current?.kill('SIGKILL');
      await current?.exited;
    },
    restart: async () => {
      await self.stop();
      await self.start();
    },
  };
  return self;
};
