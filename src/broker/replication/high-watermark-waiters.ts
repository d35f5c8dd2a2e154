/**
 * Produce requests with acks=−1 on a replicated partition, parked until the high watermark passes
 * their batch (Kafka's produce purgatory). The HW is the minimum fsynced end over the in-sync
 * replicas, so a request released here is durable on every one of them.
 *
 * A waiter ends one of four ways: the HW reaches its offset (success); the leader steps down
 * (NOT_LEADER_OR_FOLLOWER: the producer retries on the new leader, and its idempotent sequence
 * dedupes the retry); the ISR shrinks below min.insync.replicas (NOT_ENOUGH_REPLICAS_AFTER_APPEND,
 * as Kafka: the batch is in the log and may still become visible); or its request times out
 * (REQUEST_TIMED_OUT). Never success without the HW.
 */
import { KafkaProtocolError, type KafkaErrorName } from '../../protocol/kafka-errors.js';

interface Waiter {
  /** One past the batch's last offset: released once the HW is at least this. */
  readonly endOffset: number;
  readonly resolve: () => void;
  readonly reject: (error: KafkaProtocolError) => void;
  readonly timer: NodeJS.Timeout;
}

export class HighWatermarkWaiters {
  /** In arrival order, which is offset order: appends are numbered in call order. */
  private waiters: Waiter[] = [];

  constructor(private readonly partitionName: string) {}

  get size(): number {
    return this.waiters.length;
  }

  /** Resolves once `release` is called with a high watermark ≥ `endOffset`. */
  wait(endOffset: number, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        endOffset,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.remove(waiter);
          reject(new KafkaProtocolError('REQUEST_TIMED_OUT', `the in-sync replicas of ${this.partitionName} did not all fsync offset ${endOffset - 1} within ${timeoutMs} ms; the batch is in the leader's log and may still become visible`));
        }, Math.max(1, timeoutMs)),
      };
      this.waiters.push(waiter);
    });
  }

  /** Releases every waiter whose batch is below `highWatermark`. */
  release(highWatermark: number): void {
    if (this.waiters.length === 0) return;
    const done: Waiter[] = [];
    const rest: Waiter[] = [];
    for (const waiter of this.waiters) (waiter.endOffset <= highWatermark ? done : rest).push(waiter);
    if (done.length === 0) return;
    this.waiters = rest;
    for (const waiter of done) {
      clearTimeout(waiter.timer);
      waiter.resolve();
    }
  }

  /** Fails every waiter with `code` (the leader stepped down, or the ISR fell below its minimum). */
  failAll(code: KafkaErrorName, message: string): void {
    const all = this.waiters;
    this.waiters = [];
    for (const waiter of all) {
      clearTimeout(waiter.timer);
      waiter.reject(new KafkaProtocolError(code, message));
    }
  }

  private remove(waiter: Waiter): void {
    this.waiters = this.waiters.filter((candidate) => candidate !== waiter);
  }
}
