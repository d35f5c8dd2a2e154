/**
 * The mirror's commit rule for one source cluster: a source offset may be committed only once the
 * target acknowledged (acks=-1) every record below it that the mirror pulled, and only after the
 * audit counts of those records were published (`beforeCommit`), so a crash can only deliver
 * again — which the audit reports as duplicates — and never lose (KAFKA-1650: commit on the
 * producer's callback).
 *
 * The pumps report each record as they pull it (`pulled`) and when the target acknowledged it
 * (`acknowledged`, with where the target stored it); `admit` is asked before an offset is written
 * (gated-offset-store.ts) and waits until no pulled record of that partition below the offset is
 * still unacknowledged. `settle` waits for all of a partition's records before its resume point
 * is searched in the target (resume-point.ts), so no send of this process lands after the search.
 */
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { TributaryError } from '../common/errors.js';
import type { TargetPosition } from './progress-nodes.js';

export interface CommitGateOptions {
  /** Runs after the wait and before the offset is written: publishes the audit counts below it. */
  readonly beforeCommit: (topic: string, partition: number, offset: bigint) => Promise<void>;
  /** Longest wait for acknowledgements before `admit` fails (retriable): the commit is skipped. */
  readonly waitMs: number;
}

const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

export class CommitGate {
  /** Per partition: offsets pulled and not yet acknowledged → how many times (a replay pulls one again). */
  private readonly pending = new Map<string, Map<bigint, number>>();
  /** Per partition: one past the highest acknowledged offset (for the lag). */
  private readonly acknowledgedEnds = new Map<string, bigint>();
  /** Per partition: where the target stored the highest acknowledged record. */
  private readonly positions = new Map<string, TargetPosition>();
  /** Per partition: records pulled or acknowledged so far (tells whether anything moved meanwhile). */
  private readonly changes = new Map<string, number>();
  private waiters = new Set<() => void>();
  private failure: Error | undefined;

  constructor(private readonly options: CommitGateOptions) {}

  /** A record the mirror took from the consumer: offsets above it are not committable until it is acknowledged. */
  pulled(topic: string, partition: number, offset: bigint): void {
    const key = partitionKey(topic, partition);
    this.changes.set(key, (this.changes.get(key) ?? 0) + 1);
    let offsets = this.pending.get(key);
    if (offsets === undefined) this.pending.set(key, (offsets = new Map<bigint, number>()));
    offsets.set(offset, (offsets.get(offset) ?? 0) + 1);
  }

  /** The target acknowledged the record (acks=-1), storing it at `stored` (unknown for some placements). */
  acknowledged(topic: string, partition: number, offset: bigint, stored?: { readonly partition: number; readonly offset: bigint }): void {
    const key = partitionKey(topic, partition);
    this.changes.set(key, (this.changes.get(key) ?? 0) + 1);
    const offsets = this.pending.get(key);
    const count = offsets?.get(offset);
    if (offsets !== undefined && count !== undefined) {
      if (count > 1) offsets.set(offset, count - 1);
      else offsets.delete(offset);
      if (offsets.size === 0) this.pending.delete(key);
    }
    if (offset + 1n > (this.acknowledgedEnds.get(key) ?? -1n)) {
      this.acknowledgedEnds.set(key, offset + 1n);
      if (stored === undefined) this.positions.delete(key);
      else this.positions.set(key, { sourceEnd: offset + 1n, targetPartition: stored.partition, targetOffset: stored.offset });
    }
    this.wakeWaiters();
  }

  /** Where the target stored the partition's highest acknowledged record, if known: recorded with each commit. */
  position(topic: string, partition: number): TargetPosition | undefined {
    return this.positions.get(partitionKey(topic, partition));
  }

  /** One past the highest offset of the partition the target acknowledged in this process, if any. */
  acknowledgedEnd(topic: string, partition: number): bigint | undefined {
    return this.acknowledgedEnds.get(partitionKey(topic, partition));
  }

  /**
   * A mark of the partition's activity while none of its records is in flight, else undefined: the
   * same mark later means nothing was pulled or acknowledged in between.
   */
  quietMark(topic: string, partition: number): number | undefined {
    const key = partitionKey(topic, partition);
    return this.pending.has(key) ? undefined : (this.changes.get(key) ?? 0);
  }

  /** Records pulled and not yet acknowledged, over all partitions. */
  get unacknowledged(): number {
    let total = 0;
    for (const offsets of this.pending.values()) for (const count of offsets.values()) total += count;
    return total;
  }

  /** From now on every `admit` fails with `error`: some record will never be acknowledged. */
  fail(error: Error): void {
    this.failure ??= error;
    this.wakeWaiters();
  }

  /**
   * Resolves when committing `offset` (the next offset to read) of the partition is safe: no
   * pulled record below it awaits acknowledgement, and `beforeCommit` has run. Fails with
   * MIRROR_COMMIT_WAIT_TIMEOUT (retriable) after `waitMs`, or with the gate's failure.
   */
  async admit(topic: string, partition: number, offset: bigint): Promise<void> {
    // A record handed out in this turn is reported by its pump's continuation, a microtask: let them all run.
    await nextMacrotask();
    const key = partitionKey(topic, partition);
    const deadline = Date.now() + this.options.waitMs;
    for (;;) {
      if (this.failure !== undefined) throw this.failure;
      if (this.clearBelow(key, offset)) break;
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new TributaryError({
          code: 'MIRROR_COMMIT_WAIT_TIMEOUT',
          retriable: true,
          message: `not committing ${topic}-${partition} at ${offset}: the target has not acknowledged every record below it within ${this.options.waitMs} ms; the commit is skipped and will be tried again`,
          details: { topic, partition, offset: offset.toString() },
        });
      }
      await this.changeOrTimeout(remaining);
    }
    await this.options.beforeCommit(topic, partition, offset);
  }

  /**
   * Resolves once no record of the partition pulled by this process awaits acknowledgement. Fails
   * like `admit` (MIRROR_COMMIT_WAIT_TIMEOUT after `waitMs`, retriable; or the gate's failure).
   */
  async settle(topic: string, partition: number): Promise<void> {
    await nextMacrotask();
    const key = partitionKey(topic, partition);
    const deadline = Date.now() + this.options.waitMs;
    while (this.pending.has(key)) {
      if (this.failure !== undefined) throw this.failure;
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new TributaryError({
          code: 'MIRROR_COMMIT_WAIT_TIMEOUT',
          retriable: true,
          message: `cannot resume ${topic}-${partition} yet: records this mirror sent earlier are not acknowledged by the target within ${this.options.waitMs} ms`,
          details: { topic, partition },
        });
      }
      await this.changeOrTimeout(remaining);
    }
    if (this.failure !== undefined) throw this.failure;
  }

  private clearBelow(key: string, offset: bigint): boolean {
    const offsets = this.pending.get(key);
    if (offsets === undefined) return true;
    for (const pendingOffset of offsets.keys()) if (pendingOffset < offset) return false;
    return true;
  }

  private changeOrTimeout(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.add(done);
    });
  }

  private wakeWaiters(): void {
    if (this.waiters.size === 0) return;
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const wake of waiters) wake();
  }
}
