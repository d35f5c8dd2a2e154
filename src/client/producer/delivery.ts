/**
 * What `send` callers get back: a tracker per `send` call that resolves with every record's
 * metadata or rejects at the first failure, and the per-batch reports (metadata, onAcknowledged).
 */
import type { Logger } from '../../common/logger.js';
import type { RecordHeader } from '../../protocol/records.js';
import type { ProducerBatch } from './batch.js';

/** Where a record was stored. */
export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  /** The record's offset; −1 with acks=0 (nobody said). */
  readonly offset: bigint;
  /** The offset of the first record of the batch it travelled in; −1 with acks=0. */
  readonly baseOffset: bigint;
}

/** What `onAcknowledged` sees of each record: its creation time and its headers. */
export interface AcknowledgedRecord {
  readonly timestamp: number;
  readonly headers?: readonly RecordHeader[];
}

export type AcknowledgedObserver = (topic: string, records: readonly AcknowledgedRecord[]) => void;

/** Consecutive records of one `send` call, in a batch: `count` records from position `first`. */
export interface Delivery {
  readonly tracker: SendTracker;
  readonly first: number;
  count: number;
}

/** The records of one `send`: resolves with all their metadata, or rejects at the first failure. */
export class SendTracker {
  readonly results: RecordMetadata[];
  private remaining: number;
  private settled = false;

  constructor(
    count: number,
    private readonly resolve: (results: RecordMetadata[]) => void,
    private readonly reject: (error: Error) => void,
  ) {
    this.results = new Array<RecordMetadata>(count);
    this.remaining = count;
  }

  delivered(index: number, metadata: RecordMetadata): void {
    this.results[index] = metadata;
    this.remaining -= 1;
    if (this.remaining === 0 && !this.settled) {
      this.settled = true;
      this.resolve(this.results);
    }
  }

  failed(error: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.reject(error);
  }
}

/** Tells each sender of the batch where its records were stored, then the observer. */
export function reportDelivered(batch: ProducerBatch, baseOffset: bigint, observer: AcknowledgedObserver | undefined, logger: Logger | undefined): void {
  let offsetDelta = 0;
  for (const { tracker, first, count } of batch.deliveries) {
    for (let index = first; index < first + count; index++) {
      tracker.delivered(index, { topic: batch.topic, partition: batch.partition, offset: baseOffset < 0n ? -1n : baseOffset + BigInt(offsetDelta++), baseOffset });
    }
  }
  if (observer === undefined) return;
  try {
    // append gave every record a timestamp.
    observer(batch.topic, batch.records as readonly AcknowledgedRecord[]);
  } catch (error) {
    logger?.error({ topic: batch.topic, partition: batch.partition, err: error }, 'onAcknowledged threw; the records were delivered all the same');
  }
}

export function reportFailed(batch: ProducerBatch, error: Error): void {
  for (const delivery of batch.deliveries) delivery.tracker.failed(error);
}
