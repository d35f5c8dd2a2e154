/**
 * The BullMQ queues of the loader, one per purpose, and how their jobs retry.
 *
 *   tributary-runs     one job per run of a load: scheduled (a job scheduler per load file) or
 *                      enqueued by hand; it plans the run and fans it out as a flow
 *   tributary-tasks    the flow's children: one partition range each (fetch, decode, stage)
 *   tributary-commits  the flow's parent: commits the run once every child succeeded
 *   tributary-maintenance  one job per maintenance of an Iceberg load's tables (compaction, expiry,
 *                      orphan removal): scheduled by the load's `iceberg.maintenance.schedule`
 *
 * Every process of one deployment uses the same key prefix (BullMQ's default `bull`, so a
 * dashboard finds the queues without being told).
 */
import type { ConnectionOptions, DefaultJobOptions } from 'bullmq';
import { z } from 'zod';
import { parseConfig } from '../../src/common/config.js';
import { redisClientOptions, type RedisCredentials } from '../../src/common/redis-options.js';

export const QUEUE_NAMES = {
  runs: 'tributary-runs',
  tasks: 'tributary-tasks',
  commits: 'tributary-commits',
  maintenance: 'tributary-maintenance',
} as const;

export type QueuePurpose = keyof typeof QUEUE_NAMES;

export const JOB_NAMES = { run: 'run', task: 'task', commit: 'commit', maintain: 'maintain' } as const;

export const DEFAULT_QUEUE_PREFIX = 'bull';

/** Cron patterns of load files are read in UTC, like the hour folders they fill. */
export const SCHEDULE_TIMEZONE = 'UTC';

const history = { removeOnComplete: { age: 7 * 86_400, count: 1_000 }, removeOnFail: { age: 30 * 86_400, count: 5_000 } } as const;

/**
 * Retries of retriable failures, with exponential backoff. Runs and commits wait long enough for
 * a crashed holder's lease (its ZooKeeper session, 6 s by default) to lapse before giving up.
 */
export const JOB_OPTIONS = {
  run: { attempts: 5, backoff: { type: 'exponential', delay: 5_000 }, ...history },
  task: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 }, ...history },
  commit: { attempts: 8, backoff: { type: 'exponential', delay: 5_000 }, ...history },
  // A compaction that lost to a replay, or a lease held by a run, is tried again a little later.
  maintain: { attempts: 3, backoff: { type: 'exponential', delay: 30_000 }, ...history },
} as const satisfies Record<string, DefaultJobOptions>;

const redisUrlSchema = z.url({ protocol: /^rediss?$/, error: 'expected a Redis URL, e.g. redis://127.0.0.1:6379 (rediss:// for TLS)' });

/** BullMQ connection options for a Redis URL; CONFIG_INVALID names the flag when it is not one. */
export function redisConnection(url: string, source = '--redis', credentials: RedisCredentials = {}): ConnectionOptions {
  const checked = parseConfig(redisUrlSchema, url, source);
  // Workers block on Redis; BullMQ requires unlimited retries per request for them.
  return { url: checked, maxRetriesPerRequest: null, ...redisClientOptions(checked, credentials) };
}
