/**
 * A producer batch (records of one partition that travel together) and the partition queue that
 * holds batches from `send` until the broker answered for them.
 */
import { RECORD_BATCH_OVERHEAD } from '../../protocol/record-batch.js';
import type { RecordInput } from '../../protocol/records.js';
import type { Delivery } from './delivery.js';

/** Who wrote a batch, as the broker's duplicate check sees it. Fixed once assigned. */
export interface BatchIdentity {
  readonly producerId: bigint;
  readonly epoch: number;
  readonly baseSequence: number;
}

export interface ProducerBatch {
  readonly topic: string;
  readonly partition: number;
  readonly records: RecordInput[];
  /** Whose records these are, in record order. */
  readonly deliveries: Delivery[];
  /** Estimated encoded size (uncompressed), header included. */
  bytes: number;
  /** Buffer memory held by the records (released when the batch is done). */
  reserved: number;
  readonly createdAt: number;
  /** No more records join it. */
  closed: boolean;
  /** Failed attempts so far that count against `retries`. */
  failures: number;
  /** Idempotent producers only: set when the batch is first drained. */
  identity: BatchIdentity | undefined;
  /** The bytes sent, kept so a retry sends exactly the same batch. */
  encoded: Buffer | undefined;
  readonly done: Promise<void>;
  readonly markDone: () => void;
}

export interface PartitionQueue {
  readonly topic: string;
  readonly partition: number;
  /** `topic\0partition`, the key of the partition everywhere in the producer. */
  readonly key: string;
  /**
   * Waiting batches, oldest first; only the last may be open. Batches that already have an
   * identity (retries of an idempotent producer) come first, in sequence order.
   */
  readonly batches: ProducerBatch[];
  /** Batches sent and not yet answered, in the order sent. */
  readonly inFlight: ProducerBatch[];
  /** After a failure: nothing is sent from this partition before this time. */
  retryAt: number;
}

export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export function newBatch(topic: string, partition: number): ProducerBatch {
  let markDone: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    markDone = resolve;
  });
  return {
    topic,
    partition,
    records: [],
    deliveries: [],
    bytes: RECORD_BATCH_OVERHEAD,
    reserved: 0,
    createdAt: Date.now(),
    closed: false,
    failures: 0,
    identity: undefined,
    encoded: undefined,
    done,
    markDone,
  };
}

export function removeFrom(list: ProducerBatch[], batch: ProducerBatch): void {
  const index = list.indexOf(batch);
  if (index >= 0) list.splice(index, 1);
}
