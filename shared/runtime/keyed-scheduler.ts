/**
 * In-process scheduling of work per object key: at most one job per key runs at a time, at most
 * `concurrency` jobs run overall, and jobs for a busy key wait without taking a slot, so one slow
 * or failing object never holds back the others. While a key is busy, a newer job of the same
 * coalescing class replaces the waiting one (handlers re-read live state, so the newest trigger
 * covers the older); the replaced job's `superseded` callback runs (the runtime acks it).
 */
export type Job = {
  readonly key: string;
  /** Jobs with the same key and class coalesce; different classes (e.g. ticks) queue in order. */
  readonly coalesce: string;
  run(): Promise<void>;
  superseded(): void;
};

export type KeyedScheduler = {
  submit(job: Job): void;
  /** Jobs running or waiting. */
  readonly size: () => number;
  /** Resolves when nothing runs or waits. */
  idle(): Promise<void>;
};

export const keyedScheduler = (concurrency: number): KeyedScheduler => {
  const waiting = new Map<string, Job[]>(); // per key, FIFO; head runs next
  const busy = new Set<string>();
  const ready: string[] = []; // keys with waiting work and no running job, FIFO for fairness
  let running = 0;
  let idleWaiters: (() => void)[] = [];

  const size = () => running + [...waiting.values()].reduce((n, q) => n + q.length, 0);
  const checkIdle = () => {
    if (size() === 0) {
      for (const w of idleWaiters) w();
      idleWaiters = [];
    }
  };

  const pump = () => {
    while (running < concurrency && ready.length > 0) {
      const key = ready.shift() as string;
      const queue = waiting.get(key);
      const job = queue?.shift();
      if (!job) continue;
      if (queue?.length === 0) waiting.delete(key);
      busy.add(key);
      running++;
      job
        .run()
        .catch(() => undefined)
        .finally(() => {
          running--;
          busy.delete(key);
          if (waiting.has(key)) ready.push(key);
          pump();
          checkIdle();
        });
    }
  };

  return {
    submit: (job) => {
      const queue = waiting.get(job.key) ?? [];
      const same = queue.findIndex((j) => j.coalesce === job.coalesce);
      if (same >= 0) {
        queue[same]?.superseded();
        queue.splice(same, 1);
      }
      queue.push(job);
      const wasEmpty = !waiting.has(job.key);
      waiting.set(job.key, queue);
      if (wasEmpty && !busy.has(job.key)) ready.push(job.key);
      pump();
    },
    size,
    idle: () =>
      new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        checkIdle();
      }),
  };
};
