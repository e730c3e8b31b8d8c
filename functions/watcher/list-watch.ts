import { ApiStatusError, type KubeHttp } from '../../shared/kube/lite/http.ts';
import { backoffMs } from '../../shared/runtime/backoff.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { KubeObj, Watched } from './kinds.ts';

export type ListWatchHandlers = {
  /**
   * A list begins: its pages follow, then its end (every object that exists now was in a page;
   * the caller diffs against its cursor). The next page is fetched once `page` resolves, so a
   * slow consumer holds back the list instead of the list filling memory.
   */
  onList(): { page(objs: KubeObj[]): Promise<void>; end(): void };
  onEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObj): void;
};

export type ListWatchOptions = {
  inactivityTimeoutMs: number;
  relistIntervalMs: number;
  log: Logger;
  onRestart?: () => void;
  onRelist?: () => void;
};

/**
 * list + watch that does not give up: any error or close restarts the watch with back-off and
 * jitter; 410 Gone relists; no event or bookmark for `inactivityTimeoutMs` restarts it (a silently
 * dead connection); every `relistIntervalMs` a full relist lets the caller catch anything missed.
 */
export const listWatch = (api: KubeHttp, w: Watched, h: ListWatchHandlers, o: ListWatchOptions) => {
  let stopped = false;
  let abort: AbortController | undefined;
  let failures = 0;
  let lastRelist = 0;
  let wake: (() => void) | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(r, ms);
      wake = () => {
        clearTimeout(t);
        r();
      };
    });

  const list = async (): Promise<string> => {
    const sink = h.onList();
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await api.request<{
        items: KubeObj[];
        metadata: { resourceVersion: string; continue?: string };
      }>('GET', w.path, { query: { labelSelector: w.labelSelector, limit: '500', continue: cont } });
      await sink.page(page.items.map(slim));
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion;
    } while (cont && !stopped);
    if (stopped) return rv;
    sink.end();
    lastRelist = Date.now();
    o.onRelist?.();
    return rv;
  };

  const watchOnce = (rv: string) =>
    new Promise<string>((resolve, reject) => {
      let latest = rv;
      let lastSeen = Date.now();
      let settled = false;
      const finish = (error?: unknown) => {
        if (settled) return;
        settled = true;
        clearInterval(watchdog);
        abort?.abort();
        if (error) reject(error);
        else resolve(latest);
      };
      const watchdog = setInterval(
        () => {
          if (Date.now() - lastSeen > o.inactivityTimeoutMs)
            finish(new Error(`watch ${w.kind}: no event or bookmark for ${o.inactivityTimeoutMs} ms`));
          else if (Date.now() - lastRelist > o.relistIntervalMs) finish(new RelistDue());
          else if (stopped) finish();
        },
        Math.min(1000, o.inactivityTimeoutMs / 2),
      );
      abort = new AbortController();
      api
        .watch<KubeObj & { code?: number; message?: string }>(
          w.path,
          {
            resourceVersion: rv,
            allowWatchBookmarks: 'true',
            labelSelector: w.labelSelector,
            timeoutSeconds: '300',
          },
          ({ type, object: obj }) => {
            lastSeen = Date.now();
            if (type === 'BOOKMARK') {
              latest = obj.metadata?.resourceVersion ?? latest;
            } else if (type === 'ERROR') {
              finish(new ApiStatusError(obj.code ?? 500, obj.message ?? 'watch error'));
            } else if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
              latest = obj.metadata?.resourceVersion ?? latest;
              h.onEvent(type, slim(obj));
            }
          },
          abort.signal,
        )
        .then(
          () => finish(),
          (error: unknown) => finish(settled ? undefined : error),
        );
    });

  const run = async () => {
    let rv: string | undefined;
    while (!stopped) {
      try {
        rv ??= await list();
        rv = await watchOnce(rv);
        failures = 0;
      } catch (error) {
        if (stopped) break;
        if (error instanceof RelistDue || (error instanceof ApiStatusError && error.status === 410)) {
          rv = undefined;
          continue;
        }
        failures++;
        o.onRestart?.();
        o.log.warn('watch restarting', { kind: w.kind, error, attempt: failures });
        // After repeated failures, relist: a long outage may have outlived the watch cache.
        if (failures > 3) rv = undefined;
        await sleep(backoffMs(failures, 200, 10_000));
      }
    }
  };
  const done = run();
  return {
    stop: async () => {
      stopped = true;
      abort?.abort();
      wake?.();
      await done;
    },
  };
};

/**
 * managedFields are often most of an object's bytes and no function needs them (they re-read what
 * they act on): dropped on arrival, like controller-runtime's TransformStripManagedFields.
 */
const slim = (obj: KubeObj): KubeObj => {
  if (obj.metadata && 'managedFields' in obj.metadata) {
    const { managedFields: _, ...metadata } = obj.metadata as KubeObj['metadata'] & {
      managedFields?: unknown;
    };
    return { ...obj, metadata };
  }
  return obj;
};

class RelistDue extends Error {
  override readonly name = 'RelistDue';
}
