/** closeWithinGrace: a worker's stop waits for its jobs in flight, but no longer than the grace period. */
import { describe, expect, it } from 'vitest';
import { closeWithinGrace } from '../../../jobs/src/worker.js';

describe('closeWithinGrace', () => {
  it('answers true when the close finishes within the grace period, without waiting out the rest of it', async () => {
    const began = Date.now();
    expect(await closeWithinGrace(() => new Promise((resolve) => setTimeout(resolve, 10)), 60_000)).toBe(true);
    // The grace timer is cleared: a process whose jobs finished does not linger for a minute.
    expect(Date.now() - began).toBeLessThan(30_000);
  });

  it('answers false when jobs are still running at the end of the grace period', async () => {
    let finished = false;
    const never = new Promise<void>(() => {});
    expect(await closeWithinGrace(() => never.then(() => void (finished = true)), 20)).toBe(false);
    expect(finished).toBe(false);
  });

  it('passes a failing close on', async () => {
    await expect(closeWithinGrace(() => Promise.reject(new Error('connection closed')), 1_000)).rejects.toThrow('connection closed');
  });
});
