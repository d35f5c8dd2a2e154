/**
 * Time windows of creation time. Every tier must use the same window length so their counts line
 * up; reconciliation compares windows with the same start and end.
 */

/** The paper's audit window: 10 minutes. */
export const DEFAULT_WINDOW_MS = 10 * 60 * 1000;
/**
 * How long after its end a window may still receive counts before it counts as closed: records
 * created near the end still travel through the tiers, and counters publish periodically.
 */
export const DEFAULT_LATENESS_MS = 5 * 60 * 1000;

/** Start of the window holding `timestamp` (windows are aligned to the epoch). */
export function windowStartOf(timestamp: number, windowMs: number): number {
  return Math.floor(timestamp / windowMs) * windowMs;
}

/** A window is closed once `latenessMs` have passed since its end. */
export function isWindowClosed(windowEnd: number, latenessMs: number, now: number): boolean {
  return now >= windowEnd + latenessMs;
}
