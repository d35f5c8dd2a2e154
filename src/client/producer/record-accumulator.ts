/**
 * Where records wait to be sent: one queue of batches per partition, filled by `send` in call
 * order, bounded by `bufferMemory`.
 *
 * Records join the newest batch of their partition until it reaches `batchSize` bytes. Records
 * count against `bufferMemory` from `send` until their batch is acknowledged or failed; an append
 * that would go over waits, and later appends wait behind it, so a later `send` never overtakes a
 * waiting one. The accumulator never sends: it tells the sender when a batch became worth looking
 * at (`wake`), and the sender drains the queues.
 */
import { TributaryError } from '../../common/errors.js';
import { RECORD_BATCH_OVERHEAD } from '../../protocol/record-batch.js';
import type { RecordHeader, RecordInput } from '../../protocol/records.js';
import type { ClusterClient } from '../cluster-client.js';
import type { Partitioner } from '../partitioner.js';
import { newBatch, partitionKey, type PartitionQueue } from './batch.js';
import type { SendTracker } from './delivery.js';

/** Record bytes beyond key, value and headers: length, attributes, deltas, lengths (varints). */
const RECORD_OVERHEAD = 21;

/** A record to send; `partition` overrides the partitioner. */
export interface ProducerRecord extends RecordInput {
  readonly partition?: number;
}

export interface RecordAccumulatorOptions {
  readonly cluster: ClusterClient;
  readonly partitioner: Partitioner;
  readonly batchSize: number;
  readonly lingerMs: number;
  readonly bufferMemory: number;
  /** Headers added to every record that has no header named `originHeaderKey`. */
  readonly originHeaders: readonly RecordHeader[] | undefined;
  readonly originHeaderKey: string;
  /** Asks the sender to look at the queues within `delayMs`. */
  readonly wake: (delayMs: number) => void;
}

interface MemoryWaiter {
  readonly bytes: number;
  readonly resolve: () => void;
}

export class RecordAccumulator {
  readonly queues = new Map<string, PartitionQueue>();
  private bufferedBytes = 0;
  private readonly memoryWaiters: MemoryWaiter[] = [];
  /** What the origin header adds to a record's size, as recordSize counts a header. */
  private readonly originHeaderBytes: number;

  constructor(private readonly options: RecordAccumulatorOptions) {
    this.originHeaderBytes = options.originHeaders === undefined ? 0 : recordSize({ value: null, headers: options.originHeaders }) - RECORD_OVERHEAD;
  }

  /** Bytes of records accepted and not yet acknowledged or failed. */
  get buffered(): number {
    return this.bufferedBytes;
  }

  /** Some `send` waits for memory: batches should go now rather than after lingerMs. */
  get memoryShort(): boolean {
    return this.memoryWaiters.length > 0;
  }

  /** Partitions and queues the records of one `send`; records without a timestamp get `calledAt`. */
  async append(topic: string, records: readonly ProducerRecord[], tracker: SendTracker, calledAt: number): Promise<void> {
    const { cluster, partitioner, bufferMemory, originHeaders } = this.options;
    const { partitions } = await cluster.topicMetadata(topic);
    const count = partitions.length;
    const available = partitions.filter((partition) => partition.leader >= 0).map((partition) => partition.partition);
    const sizes = records.map((record, index) => {
      const size = recordSize(record) + (originHeaders === undefined || (record.headers !== undefined && this.hasOrigin(record.headers)) ? 0 : this.originHeaderBytes);
      if (size + RECORD_BATCH_OVERHEAD > bufferMemory) {
        throw new TributaryError({
          code: 'MESSAGE_TOO_LARGE',
          message: `record ${index} for topic "${topic}" takes ${size} bytes, more than bufferMemory (${bufferMemory}): send a smaller record or raise bufferMemory`,
          details: { topic, index, size },
        });
      }
      if (record.partition !== undefined && (!Number.isInteger(record.partition) || record.partition < 0 || record.partition >= count)) {
        throw new TributaryError({
          code: 'UNKNOWN_TOPIC_OR_PARTITION',
          message: `record ${index} asks for partition ${record.partition}, but topic "${topic}" has partitions 0–${count - 1}`,
          details: { topic, index, partition: record.partition },
        });
      }
      return size;
    });
    // Memory for the whole call at once when there is room (the usual case), else record by record.
    const total = sizes.reduce((sum, size) => sum + size, 0);
    const reservedAll = this.memoryWaiters.length === 0 && this.bufferedBytes + total <= bufferMemory;
    if (reservedAll) this.bufferedBytes += total;
    const queues: (PartitionQueue | undefined)[] = [];
    for (let index = 0; index < records.length; index++) {
      const record = records[index] as ProducerRecord;
      const size = sizes[index] ?? 0;
      if (!reservedAll) {
        const waiting = this.reserve(size);
        if (waiting !== undefined) await waiting;
      }
      const partition = record.partition ?? partitioner.partition(topic, record.key, count, available);
      const queue = (queues[partition] ??= this.queueFor(topic, partition));
      const headers = originHeaders === undefined ? record.headers : this.withOrigin(record.headers, originHeaders);
      const input: RecordInput =
        headers === undefined
          ? { key: record.key ?? null, value: record.value, timestamp: record.timestamp ?? calledAt }
          : { key: record.key ?? null, value: record.value, headers, timestamp: record.timestamp ?? calledAt };
      this.enqueue(queue, input, size, tracker, index);
    }
  }

  queueFor(topic: string, partition: number): PartitionQueue {
    const key = partitionKey(topic, partition);
    let queue = this.queues.get(key);
    if (queue === undefined) {
      queue = { topic, partition, key, batches: [], inFlight: [], retryAt: 0 };
      this.queues.set(key, queue);
    }
    return queue;
  }

  /** Everything accepted and not yet finished, as promises that settle when each batch is done. */
  pending(): Promise<void>[] {
    return [...this.queues.values()].flatMap((queue) => [...queue.inFlight, ...queue.batches].map((batch) => batch.done));
  }

  /** Gives back the memory of a finished batch, letting waiting appends in, in order. */
  release(bytes: number): void {
    this.bufferedBytes -= bytes;
    for (let waiter = this.memoryWaiters[0]; waiter !== undefined; waiter = this.memoryWaiters[0]) {
      if (this.bufferedBytes + waiter.bytes > this.options.bufferMemory && this.bufferedBytes > 0) break;
      this.memoryWaiters.shift();
      this.bufferedBytes += waiter.bytes;
      waiter.resolve();
    }
  }

  private enqueue(queue: PartitionQueue, record: RecordInput, size: number, tracker: SendTracker, index: number): void {
    const { batchSize, lingerMs, wake } = this.options;
    let batch = queue.batches.at(-1);
    if (batch !== undefined && !batch.closed && batch.records.length > 0 && batch.bytes + size > batchSize) batch.closed = true;
    if (batch === undefined || batch.closed) {
      batch = newBatch(queue.topic, queue.partition);
      queue.batches.push(batch);
      wake(lingerMs);
    }
    batch.records.push(record);
    const last = batch.deliveries.at(-1);
    if (last !== undefined && last.tracker === tracker && last.first + last.count === index) last.count += 1;
    else batch.deliveries.push({ tracker, first: index, count: 1 });
    batch.bytes += size;
    batch.reserved += size;
    if (batch.bytes >= batchSize) {
      batch.closed = true;
      wake(0);
    }
  }

  /** Takes `bytes` of buffer memory now, or returns a promise that resolves once they were taken. */
  private reserve(bytes: number): Promise<void> | undefined {
    if (this.memoryWaiters.length === 0 && (this.bufferedBytes + bytes <= this.options.bufferMemory || this.bufferedBytes === 0)) {
      this.bufferedBytes += bytes;
      return undefined;
    }
    // Memory is short: send what is buffered now rather than after lingerMs.
    this.options.wake(0);
    return new Promise((resolve) => this.memoryWaiters.push({ bytes, resolve }));
  }

  private hasOrigin(headers: readonly RecordHeader[]): boolean {
    for (const header of headers) if (header.key === this.options.originHeaderKey) return true;
    return false;
  }

  /** The record's headers with the origin header added when it has none. */
  private withOrigin(headers: readonly RecordHeader[] | undefined, originHeaders: readonly RecordHeader[]): readonly RecordHeader[] {
    if (headers === undefined || headers.length === 0) return originHeaders;
    return this.hasOrigin(headers) ? headers : [...headers, ...originHeaders];
  }
}

/** The encoded size of a record, near enough for batching and memory accounting. */
function recordSize(record: RecordInput): number {
  let size = RECORD_OVERHEAD + (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const header of record.headers ?? []) size += 10 + Buffer.byteLength(header.key) + (header.value?.length ?? 0);
  return size;
}
