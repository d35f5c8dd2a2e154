/** Bounded exponential backoff, retrying only what says it may be retried. */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { withRetries } from '../../../src/etl/warehouse/retry.js';

const noPause = { attempts: 3, initialDelayMs: 0, maxDelayMs: 0 };
const unavailable = (): TributaryError => new TributaryError({ code: 'WAREHOUSE_UNAVAILABLE', message: 'safe mode', retriable: true, details: { path: 'p' } });

describe('withRetries', () => {
  it('retries a retriable failure until it succeeds', async () => {
    let calls = 0;
    const retries: number[] = [];
    const result = await withRetries(noPause, async (attempt) => {
      calls += 1;
      if (attempt < 3) throw unavailable();
      return 'done';
    }, { onRetry: (_error, failedAttempt) => retries.push(failedAttempt) });
    expect(result).toBe('done');
    expect(calls).toBe(3);
    expect(retries).toEqual([1, 2]);
  });

  it('gives up after the last attempt with the count in the details, still retriable', async () => {
    let calls = 0;
    const outcome = await withRetries(noPause, async () => {
      calls += 1;
      throw unavailable();
    }).catch((error: unknown) => error);
    expect(calls).toBe(3);
    expect(outcome).toBeInstanceOf(TributaryError);
    const error = outcome as TributaryError;
    expect(error).toMatchObject({ code: 'WAREHOUSE_UNAVAILABLE', retriable: true, details: { path: 'p', attempts: 3 } });
    expect(error.message).toContain('gave up after 3 attempts');
  });

  it('never retries a permanent failure or a foreign error', async () => {
    for (const thrown of [new TributaryError({ code: 'WAREHOUSE_FILE_EXISTS', message: 'exists' }), new TypeError('a bug')]) {
      let calls = 0;
      const outcome = await withRetries(noPause, async () => {
        calls += 1;
        throw thrown;
      }).catch((error: unknown) => error);
      expect(outcome).toBe(thrown);
      expect(calls).toBe(1);
    }
  });
});
