/**
 * Exponential backoff with jitter, shared by everything that retries on its own schedule (the
 * warehouse's calls, the replica manager's role transitions): one rule, so a fix reaches all.
 */

/** Where the pauses start and where they stop growing. */
export interface BackoffSchedule {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * The pause after the `failedAttempt`-th failure (1-based): doubling from the initial delay, capped,
 * then jittered down to between half and all of it so that many workers do not retry in step.
 */
export function backoffDelay(schedule: BackoffSchedule, failedAttempt: number, random: () => number = Math.random): number {
  // A bounded exponent: something failing for days must not compute 2 ** 100000 (Infinity; NaN from a 0 ms start).
  const ceiling = Math.min(schedule.maxDelayMs, schedule.initialDelayMs * 2 ** Math.min(52, Math.max(0, failedAttempt - 1)));
  return Math.round(ceiling * (0.5 + random() / 2));
}
