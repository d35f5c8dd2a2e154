/** Proves the harness's Redis runs BullMQ: a job enqueued on a queue is processed by a worker. */
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { redisAddress } from '../services.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe('Redis with BullMQ', () => {
  it('is configured as BullMQ requires: Redis 7, noeviction, no persistence', async () => {
    const redis = new Redis({ host: redisAddress().host, port: redisAddress().port });
    closers.push(() => redis.quit());
    expect(await redis.info('server')).toMatch(/redis_version:7\./);
    expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    expect(await redis.config('GET', 'save')).toEqual(['save', '']);
    expect(await redis.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
  });

  it('processes an enqueued job with a worker and records its result', async () => {
    const connection = { host: redisAddress().host, port: redisAddress().port, maxRetriesPerRequest: null };
    const name = `smoke-${process.pid}-${Date.now()}`;
    const queue = new Queue(name, { connection });
    const events = new QueueEvents(name, { connection });
    closers.push(() => queue.close(), () => events.close());
    await events.waitUntilReady();

    const seen: unknown[] = [];
    const worker = new Worker<{ partition: number; from: number; to: number }, { records: number }>(
      name,
      async (job) => {
        seen.push(job.data);
        return { records: job.data.to - job.data.from };
      },
      { connection, concurrency: 2 },
    );
    closers.push(() => worker.close());

    const job = await queue.add('load-range', { partition: 3, from: 100, to: 250 });
    const result: unknown = await job.waitUntilFinished(events, 30_000);
    expect(result).toEqual({ records: 150 });
    expect(seen).toEqual([{ partition: 3, from: 100, to: 250 }]);
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 1, failed: 0 });
  });
});
