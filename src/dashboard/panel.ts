/**
 * A panel's data, or why it has none. Every source the dashboard reads (load files, a warehouse,
 * the audit topic, ZooKeeper, Redis) is read through `gather`, so one that fails or hangs
 * fills its own panel with the error and never takes the page down with it.
 */
import { isTributaryError } from '../common/errors.js';

export interface PanelError {
  /** What was being read, e.g. `warehouse of load page-views`, `audit topic`. */
  readonly source: string;
  /** The TributaryError code, or a code of ours (DASHBOARD_TIMEOUT, NOT_CONFIGURED, UNEXPECTED). */
  readonly code: string;
  readonly message: string;
}

export type Panel<T> = { readonly ok: true; readonly data: T } | { readonly ok: false; readonly error: PanelError };

export function panelError(source: string, error: unknown): PanelError {
  if (isTributaryError(error)) return { source, code: error.code, message: error.message };
  return { source, code: 'UNEXPECTED', message: error instanceof Error ? error.message : String(error) };
}

export function notConfigured(source: string, message: string): Panel<never> {
  return { ok: false, error: { source, code: 'NOT_CONFIGURED', message } };
}

/**
 * Runs `work` and wraps its result. A source that has not answered within `timeoutMs` is reported
 * as DASHBOARD_TIMEOUT; the work itself goes on in the background (nothing here can cancel a
 * WebHDFS or ZooKeeper call) and its late failure is swallowed.
 */
export async function gather<T>(source: string, timeoutMs: number, work: () => Promise<T>): Promise<Panel<T>> {
  let timer: NodeJS.Timeout | undefined;
  const running = work();
  const timeout = new Promise<Panel<T>>((resolve) => {
    timer = setTimeout(
      () => resolve({ ok: false, error: { source, code: 'DASHBOARD_TIMEOUT', message: `${source} did not answer within ${Math.round(timeoutMs / 1000)} s` } }),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([running.then((data): Panel<T> => ({ ok: true, data }), (error: unknown): Panel<T> => ({ ok: false, error: panelError(source, error) })), timeout]);
  } finally {
    clearTimeout(timer);
    running.catch(() => undefined);
  }
}
