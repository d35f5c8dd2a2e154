/**
 * The BullMQ queues in Redis (--redis): the ones named with --queue, and every queue found in
 * Redis under the key prefix (BullMQ writes `<prefix>:<queue>:meta` when a Queue is created), so
 * the dashboard shows the loads' queues without being told their names. The dashboard only
 * reads: its Queue objects skip BullMQ's metadata update, which is a write.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';

/** The job states a queue summary counts (BullMQ 6 keeps a paused queue's jobs in waiting). */
export const JOB_STATES = ['active', 'waiting', 'waiting-children', 'prioritized', 'delayed', 'completed', 'failed'] as const;
export type JobState = (typeof JOB_STATES)[number];

export interface QueueSummary {
  readonly name: string;
  readonly counts: Readonly<Record<JobState, number>>;
}

export const DEFAULT_PREFIX = 'bull';

export class QueueSource {
  private readonly open = new Map<string, Queue>();
  private readonly listeners: ((queues: readonly Queue[]) => void)[] = [];

  constructor(
    private readonly redis: Redis,
    readonly prefix: string,
    private readonly named: readonly string[],
    private readonly logger: Logger,
  ) {}

  describe(): string {
    const { host, port, db } = this.redis.options;
    return `Redis ${host ?? '?'}:${port ?? '?'}/${db ?? 0} (prefix ${this.prefix})`;
  }

  /** Called with every queue whenever the set of queues changes (Bull Board follows it). */
  onChange(listener: (queues: readonly Queue[]) => void): void {
    this.listeners.push(listener);
  }

  /** Queue names in Redis under the prefix, plus the named ones, sorted. */
  async discover(): Promise<string[]> {
    const pattern = `${escapeGlob(this.prefix)}:*:meta`;
    const found = new Set(this.named);
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const name = key.slice(this.prefix.length + 1, -':meta'.length);
        // BullMQ refuses ':' in queue names, so a key with more of them belongs to something else.
        if (name !== '' && !name.includes(':')) found.add(name);
      }
    } while (cursor !== '0');
    return [...found].sort();
  }

  /** Brings the open Queue objects in line with Redis; tells the listeners if the set changed. */
  async refresh(): Promise<readonly Queue[]> {
    const names = await this.discover();
    let changed = false;
    for (const name of names) {
      if (this.open.has(name)) continue;
      this.open.set(name, new Queue(name, { connection: this.redis, prefix: this.prefix, skipMetasUpdate: true }));
      changed = true;
    }
    for (const [name, queue] of this.open) {
      if (names.includes(name)) continue;
      this.open.delete(name);
      await queue.close().catch((error: unknown) => this.logger.warn({ err: error, queue: name }, 'closing a vanished queue failed'));
      changed = true;
    }
    const queues = [...this.open.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    if (changed) for (const listener of this.listeners) listener(queues);
    return queues;
  }

  async summaries(): Promise<QueueSummary[]> {
    const queues = await this.refresh();
    return Promise.all(
      queues.map(async (queue) => {
        const counts = await queue.getJobCounts(...JOB_STATES);
        return { name: queue.name, counts: Object.fromEntries(JOB_STATES.map((state) => [state, counts[state] ?? 0])) as Record<JobState, number> };
      }),
    );
  }

  /** Closes the Queue objects; the Redis connection is the caller's. */
  async close(): Promise<void> {
    const queues = [...this.open.values()];
    this.open.clear();
    await Promise.all(queues.map((queue) => queue.close().catch(() => undefined)));
  }
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (character) => `\\${character}`);
}
