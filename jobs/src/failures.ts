/**
 * How a failure of the loader becomes a job's fate. A retriable failure (a broker or HDFS away for
 * a moment, a lease still held) is thrown as a plain Error, so BullMQ retries the job with backoff. Any
 * other failure (a bad load file, offsets lost to retention, a schema problem, a fenced commit, an
 * unexpected bug) cannot get better by trying again: it fails the job at once with
 * UnrecoverableError, whose message, the reason and its code, becomes the job's failedReason.
 */
import { UnrecoverableError } from 'bullmq';
import { isRetriable, isTributaryError } from '../../src/common/errors.js';

/** A retriable failure as asJobFailure throws it: its message is the reason already. */
class RetriableJobFailure extends Error {}

export function asJobFailure(error: unknown): Error {
  if (error instanceof UnrecoverableError) return error;
  // Any other Error is retried by BullMQ; both kinds carry the reason with its code.
  if (isRetriable(error)) return new RetriableJobFailure(failureReason(error), { cause: error });
  return new UnrecoverableError(failureReason(error));
}

/** The reason as an operator reads it: the message, then the code in brackets (as the CLI prints it). */
export function failureReason(error: unknown): string {
  // The worker's `failed` event hands back what asJobFailure threw: not "unexpected" (the loader
  // chaos runs found every lease-busy retry logged as an unexpected failure).
  if (error instanceof UnrecoverableError || error instanceof RetriableJobFailure) return error.message;
  if (isTributaryError(error)) return `${error.message} [${error.code}]`;
  if (error instanceof Error) return `unexpected failure: ${error.message}`;
  return `unexpected failure: ${String(error)}`;
}

/** Runs `work`; its failure is rethrown as asJobFailure decides. */
export async function failingAsJob<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asJobFailure(error);
  }
}
