/**
 * Bounded exponential backoff for warehouse calls that are safe to repeat (reads, MKDIRS, the
 * NameNode half of CREATE). Only errors flagged `retriable` are retried; after the last attempt
 * the last error is thrown, still retriable, with the number of attempts in its details.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelay, type BackoffSchedule } from '../../common/backoff.js';
import { isRetriable, TributaryError } from '../../common/errors.js';

export interface RetryPolicy extends BackoffSchedule {
  /** Calls in all, the first included. */
  readonly attempts: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 5, initialDelayMs: 200, maxDelayMs: 5_000 };

export interface RetryHooks {
  /** Called before each pause, e.g. to log. */
  readonly onRetry?: (error: unknown, failedAttempt: number, delayMs: number) => void;
  readonly random?: () => number;
}

export async function withRetries<T>(policy: RetryPolicy, action: (attempt: number) => Promise<T>, hooks: RetryHooks = {}): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await action(attempt);
    } catch (error) {
      if (!isRetriable(error)) throw error;
      if (attempt >= policy.attempts) throw gaveUp(error, attempt);
      const delayMs = backoffDelay(policy, attempt, hooks.random);
      hooks.onRetry?.(error, attempt, delayMs);
      await sleep(delayMs);
    }
  }
}

function gaveUp(error: unknown, attempts: number): unknown {
  if (!(error instanceof TributaryError) || attempts <= 1) return error;
  return new TributaryError({
    code: error.code,
    message: `${error.message} (gave up after ${attempts} attempts)`,
    retriable: true,
    cause: error,
    details: { ...error.details, attempts },
  });
}
