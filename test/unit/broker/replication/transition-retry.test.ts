/**
 * The retry schedule of failed role transitions (transition-retry.ts): exponential backoff with
 * jitter, slower for a failing disk; one timer per partition; one log line per attempt, at error
 * every 10th; storage failures told by code or errno anywhere in the cause chain.
 */
import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { ReplicationMetrics } from '../../../../src/broker/replication/replication-metrics.js';
import { DEFAULT_TRANSITION_RETRY, storageFailureCode, TransitionRetries } from '../../../../src/broker/replication/transition-retry.js';
import { backoffDelay } from '../../../../src/common/backoff.js';
import { ManualClock } from '../../../../src/common/clock.js';
import { TributaryError } from '../../../../src/common/errors.js';
import { memoryLogger } from '../../storage/helpers.js';
import { checkpointFailure } from './transition-failures.js';

describe('TransitionRetries', () => {
  const target = { partition: 't-0', role: 'leader of epoch 1', directory: '/data/t-0' };

  function retries(settings = DEFAULT_TRANSITION_RETRY): { retries: TransitionRetries; lines: Record<string, unknown>[] } {
    const { logger, lines } = memoryLogger();
    const metrics = new ReplicationMetrics(new Registry());
    // Jitter pinned at its top: the pauses are the schedule's own.
    return { retries: new TransitionRetries(settings, { clock: new ManualClock(), logger, failures: metrics.transitionFailures, random: () => 0.999_999 }), lines };
  }

  it('backs off from 100 ms doubling to 10 s, and from 1 s to 60 s for a failing disk', () => {
    const { retries: other, lines } = retries();
    const delays = Array.from({ length: 9 }, () => (other.failed(target, new Error('boom'), () => {}).details.nextDelayMs as number));
    expect(delays).toEqual([100, 200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000]);
    other.stop();
    expect(lines.filter((line) => line.level === 40)).toHaveLength(9);
    const { retries: storage } = retries();
    const storageDelays = Array.from({ length: 8 }, () => (storage.failed(target, checkpointFailure(), () => {}).details.nextDelayMs as number));
    expect(storageDelays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
    storage.stop();
    // Jitter keeps each pause between half and all of the schedule's.
    expect(backoffDelay(DEFAULT_TRANSITION_RETRY.backoff, 1, () => 0)).toBe(50);
  });

  it('keeps one timer per partition, logs every 10th consecutive failure at error, and stops cleanly', () => {
    const { retries: schedule, lines } = retries();
    for (let attempt = 1; attempt <= 20; attempt += 1) schedule.failed(target, new Error('boom'), () => {});
    expect(schedule.pendingTimers).toBe(1);
    expect(schedule.attempts('t-0')).toBe(20);
    expect(lines.filter((line) => line.level === 50).map((line) => line.attempt)).toEqual([10, 20]);
    expect(lines.filter((line) => line.level === 40)).toHaveLength(18);
    schedule.stop();
    expect(schedule.pendingTimers).toBe(0);
    // After stop a failure is still logged, but schedules nothing.
    schedule.failed(target, new Error('boom'), () => {});
    expect(schedule.pendingTimers).toBe(0);
  });

  it('tells a storage failure by its code or its errno anywhere in the cause chain', () => {
    expect(storageFailureCode(checkpointFailure())).toBe('EIO');
    expect(storageFailureCode(new TributaryError({ code: 'KAFKA_STORAGE_ERROR', message: 'offline' }))).toBe('KAFKA_STORAGE_ERROR');
    expect(storageFailureCode(new Error('wrapped', { cause: Object.assign(new Error('EROFS'), { code: 'EROFS', errno: -30, syscall: 'open' }) }))).toBe('EROFS');
    expect(storageFailureCode(new TributaryError({ code: 'BAD_VERSION', message: 'raced' }))).toBeUndefined();
    expect(storageFailureCode(new Error('boom'))).toBeUndefined();
  });
});
