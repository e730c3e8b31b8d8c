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
  run(slot: Slot): Promise<void>;
  superseded(): void;
};

/** A running job's hold on one of the concurrency slots. */
export type Slot = {
  /**
   * Runs `wait` without holding the slot, then takes a slot again (ahead of jobs that have not
   * started) before returning. The key stays the job's all along: no other job of it starts.
   * For waits on someone else, such as an object lock another replica holds, that must not keep
   * other objects' jobs from running. Await it: a job ends only after its `outside` calls did.
   */
  outside<T>(wait: () => Promise<T>): Promise<T>;
};

export type KeyedScheduler = {
  submit(job: Job): void;
  /** Jobs running (in a slot or not) or waiting. */
  readonly size: () => number;
  /** Resolves when nothing runs or waits. */
  idle(): Promise<void>;
};

export const keyedScheduler = (concurrency: number): KeyedScheduler => {
  const waiting = new Map<string, Job[]>(); // per key, FIFO; head runs next
  const busy = new Set<string>();
  const ready: string[] = []; // keys with waiting work and no running job, FIFO for fairness
  const resuming: (() => void)[] = []; // started jobs back from a wait outside their slot, FIFO
  let slots = 0; // slots taken
  let started = 0; // jobs started and not ended, in a slot or outside it
  let idleWaiters: (() => void)[] = [];

  const size = () => started + [...waiting.values()].reduce((n, q) => n + q.length, 0);
  const checkIdle = () => {
    if (size() === 0) {
      for (const w of idleWaiters) w();
      idleWaiters = [];
    }
  };

  const start = (key: string, job: Job) => {
    busy.add(key);
    started++;
    slots++;
    let inSlot = true;
    let ended = false;
    const slot: Slot = {
      outside: async (wait) => {
        if (!inSlot) return wait();
        inSlot = false;
        slots--;
        pump();
        try {
          return await wait();
        } finally {
          await new Promise<void>((resolve) => {
            resuming.push(() => {
              // A job that did not await its wait has ended: the slot is not its to keep.
              if (ended) slots--;
              else inSlot = true;
              resolve();
            });
            pump();
          });
        }
      },
    };
    job
      .run(slot)
      .catch(() => undefined)
      .finally(() => {
        ended = true;
        if (inSlot) slots--;
        started--;
        busy.delete(key);
        if (waiting.has(key)) ready.push(key);
        pump();
        checkIdle();
      });
  };

  const pump = () => {
    while (slots < concurrency && resuming.length > 0) {
      slots++;
      resuming.shift()?.();
    }
    while (slots < concurrency && ready.length > 0) {
      const key = ready.shift() as string;
      const queue = waiting.get(key);
      const job = queue?.shift();
      if (!job) continue;
      if (queue?.length === 0) waiting.delete(key);
      start(key, job);
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
