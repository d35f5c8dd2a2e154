/** Exponential backoff with jitter: the schedule every self-timed retry follows. */
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../../src/common/backoff.js';

const policy = { initialDelayMs: 100, maxDelayMs: 1_000 };

describe('backoffDelay', () => {
  it('doubles from the initial delay up to the cap, jittered between half and all of it', () => {
    expect([1, 2, 3, 4, 5, 10].map((attempt) => backoffDelay(policy, attempt, () => 0.999_999))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect([1, 2, 3, 4, 5, 10].map((attempt) => backoffDelay(policy, attempt, () => 0))).toEqual([50, 100, 200, 400, 500, 500]);
  });

  it('stays a number after very many failures, also from a 0 ms start', () => {
    expect(backoffDelay(policy, 100_000, () => 0.999_999)).toBe(1_000);
    expect(backoffDelay({ initialDelayMs: 0, maxDelayMs: 0 }, 100_000)).toBe(0);
  });
});
