/**
 * The producer: `send(topic, records)` resolves once every record of the call is acknowledged as
 * `acks` asks (−1: stored and flushed; 1: stored by the leader; 0: written to the socket).
 *
 * How records travel:
 *
 *   send ─▶ partitioner ─▶ per-partition queue of batches ─▶ drain ─▶ one Produce per broker
 *                          (the last batch fills until                 (at most one batch per
 *                           batchSize or lingerMs)                      partition in it)
 *
 * - **Batching.** Each partition has a queue of batches. Records join the newest batch until it
 *   reaches `batchSize` bytes; a batch is sent when it is full, when it is `lingerMs` old, on
 *   `flush()`/`close()`, or at once when `send` is waiting for buffer memory. The batches that are
 *   ready at the same moment for partitions led by the same broker go in one Produce request.
 * - **Backpressure.** Records count against `bufferMemory` from `send` until they are
 *   acknowledged or failed. A `send` that would go over waits; sends are taken in call order, so
 *   a later `send` never overtakes a waiting one.
 * - **Ordering under retries.** With `retries` > 0 a partition has at most one batch in flight.
 *   A batch that fails retriably goes back to the head of its partition's queue and is sent again,
 *   byte for byte, after a backoff; nothing behind it is sent before it succeeds or is given up,
 *   so a retry never reorders records within a partition. (A lost answer after a stored batch can
 *   store it twice, next to each other: delivery is at least once, never reordered.)
 *   With `retries` = 0 up to 5 batches per partition are pipelined, in order, on one connection.
 * - **Failures.** NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE and a
 *   lost connection refresh the topic's metadata before the retry. A non-retriable error, or a
 *   retriable one after `retries`, rejects the sends whose records were in the batch with a
 *   TributaryError whose code is the Kafka error name.
 */
import { TributaryError, isRetriable } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { ProduceApi, type ProduceRequest, type ProduceResponse } from '../protocol/apis/produce.js';
import { KafkaErrorCode, kafkaErrorName } from '../protocol/kafka-errors.js';
import { Compression, RECORD_BATCH_OVERHEAD, type CompressionName } from '../protocol/record-batch.js';
import { encodeRecordBatch, type RecordHeader, type RecordInput } from '../protocol/records.js';
import { ClusterClient, jitter, type ClusterClientOptions } from './cluster-client.js';
import { Partitioner, type NullKeyStrategy } from './partitioner.js';

/** Produce v8: v7 plus the broker's error message per partition (non-flexible; Kafka 2.4+). */
export const PRODUCE_VERSION = 8;

export type Acks = 0 | 1 | -1;
/** none, gzip, snappy, lz4 (and zstd, which needs Produce v7+ at the broker). */
export type CompressionCodec = CompressionName;

/** A record to send; `partition` overrides the partitioner. */
export interface ProducerRecord extends RecordInput {
  readonly partition?: number;
}

/** The record header naming the server a record was created on (the audit counts by it). */
export const ORIGIN_HEADER = 'tributary.origin';

/** What `onAcknowledged` sees of each record: its creation time and its headers. */
export interface AcknowledgedRecord {
  readonly timestamp: number;
  readonly headers?: readonly RecordHeader[];
}

/** Where a record was stored. */
export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  /** The record's offset; −1 with acks=0 (nobody said). */
  readonly offset: bigint;
  /** The offset of the first record of the batch it travelled in; −1 with acks=0. */
  readonly baseOffset: bigint;
}

export interface ProducerOptions {
  /** −1 (all, default), 1 (leader) or 0 (none, no answer). */
  readonly acks?: Acks;
  readonly compression?: CompressionCodec;
  /** Bytes of records per batch before it is sent; default 16384. */
  readonly batchSize?: number;
  /** How long a batch waits for more records; default 5 ms. */
  readonly lingerMs?: number;
  /** Bytes of records held before `send` waits for acknowledgements; default 32 MiB. */
  readonly bufferMemory?: number;
  /** Times a batch is sent again after a retriable failure; default 5. */
  readonly retries?: number;
  /** First wait before a retry; doubles per attempt up to `retryBackoffMaxMs`. Default 100 ms. */
  readonly retryBackoffMs?: number;
  /** Default 1000 ms. */
  readonly retryBackoffMaxMs?: number;
  /** How records without a key are spread; keyed records always go by murmur2. Default round-robin. */
  readonly partitioner?: NullKeyStrategy | Partitioner;
  /** How long the broker may take to answer a Produce; default 30 s. */
  readonly requestTimeoutMs?: number;
  /** Origin server added as the ORIGIN_HEADER header to every record that has none. */
  readonly origin?: string;
  /**
   * Called once per batch that is acknowledged (as `acks` says; with acks=0, once written), with
   * the records as sent. The audit counts with it, so the client layer needs no audit import.
   * It must not throw (a throw is logged and ignored) and should be quick: it runs on the I/O path.
   */
  readonly onAcknowledged?: (topic: string, records: readonly AcknowledgedRecord[]) => void;
  readonly logger?: Logger;
}

export interface ProducerConnectOptions extends ProducerOptions {
  readonly bootstrap: readonly string[];
  readonly clientId?: string;
  /** Default true: sending to an unknown topic creates it where the broker allows that. */
  readonly allowAutoTopicCreation?: boolean;
}

/** Record bytes beyond key, value and headers: length, attributes, deltas, lengths (varints). */
const RECORD_OVERHEAD = 21;
const PIPELINED_BATCHES_WITHOUT_RETRIES = 5;
/** Largest batch made by merging queued batches: below the default max.message.bytes (1 MiB). */
const MERGED_BATCH_BYTES = 512 * 1024;
/** Errors after which the partition's leader may have moved: ask for metadata before retrying. */
const STALE_METADATA: ReadonlySet<string> = new Set([
  'NOT_LEADER_OR_FOLLOWER',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'CONNECTION_LOST',
  'REQUEST_TIMED_OUT',
  'BROKER_UNREACHABLE',
  'BROKER_NOT_AVAILABLE',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'KAFKA_STORAGE_ERROR',
]);
/** Produce errors that are worth retrying, beyond kafka-errors.ts's own retriable set. */
const RETRIABLE_PRODUCE_ERRORS: ReadonlySet<string> = new Set([
  'CORRUPT_MESSAGE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_OR_FOLLOWER',
  'REQUEST_TIMED_OUT',
  'KAFKA_STORAGE_ERROR',
  'NETWORK_EXCEPTION',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
]);

/** What to do about a Produce error that will not go away by itself. */
const ADVICE: Readonly<Record<string, string>> = {
  MESSAGE_TOO_LARGE: 'the batch is larger than the broker accepts (message.max.bytes): send smaller records, or lower batchSize',
  RECORD_LIST_TOO_LARGE: 'the request is larger than the broker accepts: lower batchSize',
  INVALID_RECORD: 'the broker found the batch invalid: check the records (keys, timestamps, headers) and report it if they are fine',
  CORRUPT_MESSAGE: 'the batch failed its CRC check at the broker every time: check the network path, and report it with the broker log',
  INVALID_TIMESTAMP: "a record's timestamp is outside what the topic accepts: send current timestamps",
  INVALID_REQUIRED_ACKS: 'acks must be -1, 0 or 1',
  UNSUPPORTED_COMPRESSION_TYPE: 'the broker does not accept this compression codec: choose another one',
  UNSUPPORTED_FOR_MESSAGE_FORMAT: 'the topic uses an old message format: upgrade it or send without compression',
  INVALID_TOPIC_EXCEPTION: 'the topic name is invalid: use 1–249 characters of a–z, A–Z, 0–9, ".", "_" and "-"',
  TOPIC_AUTHORIZATION_FAILED: 'this client may not write to the topic: ask for write permission',
  UNKNOWN_SERVER_ERROR: 'the broker failed unexpectedly: see its log',
};

/** Consecutive records of one `send` call, in a batch: `count` records from position `first`. */
interface Delivery {
  readonly tracker: SendTracker;
  readonly first: number;
  count: number;
}

/** The records of one `send`: resolves with all their metadata, or rejects at the first failure. */
class SendTracker {
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

interface Batch {
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
  /** Failed attempts so far. */
  failures: number;
  /** The bytes sent, kept so a retry sends exactly the same batch. */
  encoded: Buffer | undefined;
  readonly done: Promise<void>;
  readonly markDone: () => void;
}

interface PartitionQueue {
  readonly topic: string;
  readonly partition: number;
  /** Waiting batches, oldest first; only the last may be open. */
  readonly batches: Batch[];
  /** Batches sent and not yet answered, oldest first. */
  readonly inFlight: Batch[];
  /** After a failure: nothing is sent from this partition before this time. */
  retryAt: number;
}

interface MemoryWaiter {
  readonly bytes: number;
  readonly resolve: () => void;
}

export class Producer {
  readonly acks: Acks;
  readonly compression: CompressionCodec;
  readonly batchSize: number;
  readonly lingerMs: number;
  readonly bufferMemory: number;
  readonly retries: number;
  private readonly retryBackoffMs: number;
  private readonly retryBackoffMaxMs: number;
  private readonly requestTimeoutMs: number;
  private readonly maxInFlight: number;
  private readonly partitioner: Partitioner;
  private readonly logger: Logger | undefined;
  /** `[origin header]`, shared by every record that had no headers; undefined without `origin`. */
  private readonly originHeaders: readonly RecordHeader[] | undefined;
  /** What the origin header adds to a record's size, as recordSize counts a header. */
  private readonly originHeaderBytes: number;
  private readonly onAcknowledged: ((topic: string, records: readonly AcknowledgedRecord[]) => void) | undefined;

  private readonly queues = new Map<string, PartitionQueue>();
  private bufferedBytes = 0;
  private readonly memoryWaiters: MemoryWaiter[] = [];
  /** Appends run one `send` after another, in call order. */
  private appendTail: Promise<void> = Promise.resolve();
  private flushing = 0;
  private closing: Promise<void> | undefined;
  private drainTimer: NodeJS.Timeout | undefined;
  private drainAt = Infinity;
  private drainImmediate: NodeJS.Immediate | undefined;
  private readonly staleTopics = new Set<string>();
  private metadataRefresh: Promise<void> | undefined;
  /** Per broker: the end of the chain that writes its requests in order. */
  private readonly brokerTails = new Map<number, Promise<void>>();

  constructor(
    readonly cluster: ClusterClient,
    options: ProducerOptions = {},
    private readonly ownsCluster = false,
  ) {
    this.acks = options.acks ?? -1;
    this.compression = options.compression ?? 'none';
    this.batchSize = options.batchSize ?? 16_384;
    this.lingerMs = options.lingerMs ?? 5;
    this.bufferMemory = options.bufferMemory ?? 32 * 1024 * 1024;
    this.retries = options.retries ?? 5;
    this.retryBackoffMs = options.retryBackoffMs ?? 100;
    this.retryBackoffMaxMs = options.retryBackoffMaxMs ?? 1000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.logger = options.logger;
    this.originHeaders = options.origin === undefined ? undefined : [{ key: ORIGIN_HEADER, value: Buffer.from(options.origin, 'utf8') }];
    this.originHeaderBytes = this.originHeaders === undefined ? 0 : recordSize({ value: null, headers: this.originHeaders }) - RECORD_OVERHEAD;
    this.onAcknowledged = options.onAcknowledged;
    this.partitioner = options.partitioner instanceof Partitioner ? options.partitioner : new Partitioner({ nullKeys: options.partitioner ?? 'round-robin' });
    this.maxInFlight = this.retries > 0 ? 1 : PIPELINED_BATCHES_WITHOUT_RETRIES;
    validateOptions(this);
  }

  /** A producer with its own cluster client, closed with it. */
  static async connect(options: ProducerConnectOptions): Promise<Producer> {
    const clusterOptions: ClusterClientOptions = {
      bootstrap: options.bootstrap,
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
      ...(options.allowAutoTopicCreation === undefined ? {} : { allowAutoTopicCreation: options.allowAutoTopicCreation }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    };
    const cluster = await ClusterClient.connect(clusterOptions);
    try {
      return new Producer(cluster, options, true);
    } catch (error) {
      cluster.close();
      throw error;
    }
  }

  /** Bytes of records accepted and not yet acknowledged or failed. */
  get buffered(): number {
    return this.bufferedBytes;
  }

  /**
   * Sends `records` to `topic`. Resolves, in record order, with where each was stored once all are
   * acknowledged; rejects with the first failure (other records of the call may have been stored).
   */
  send(topic: string, records: readonly ProducerRecord[]): Promise<RecordMetadata[]> {
    if (this.closing !== undefined) {
      return Promise.reject(new TributaryError({ code: 'PRODUCER_CLOSED', message: 'the producer is closed; create a new one to send more' }));
    }
    if (records.length === 0) return Promise.resolve([]);
    return new Promise<RecordMetadata[]>((resolve, reject) => {
      const tracker = new SendTracker(records.length, resolve, reject);
      const calledAt = Date.now();
      const appended = this.appendTail.then(() => this.append(topic, records, tracker, calledAt));
      this.appendTail = appended.catch((error: unknown) => tracker.failed(asError(error)));
    });
  }

  /** Sends everything accepted so far now, and waits until all of it is acknowledged or failed. */
  async flush(): Promise<void> {
    this.flushing += 1;
    try {
      await this.appendTail;
      const pending = [...this.queues.values()].flatMap((queue) => [...queue.inFlight, ...queue.batches].map((batch) => batch.done));
      this.scheduleDrain(0);
      await Promise.all(pending);
    } finally {
      this.flushing -= 1;
    }
  }

  /** Refuses new sends, delivers (or fails) what was accepted, and closes an owned cluster client. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.flush();
      clearTimeout(this.drainTimer);
      if (this.drainImmediate !== undefined) clearImmediate(this.drainImmediate);
      if (this.ownsCluster) this.cluster.close();
    })();
    return this.closing;
  }

  // ---------------------------------------------------------------------------------------------
  // Accepting records

  /** Partitions and queues the records of one `send`; records without a timestamp get `calledAt`. */
  private async append(topic: string, records: readonly ProducerRecord[], tracker: SendTracker, calledAt: number): Promise<void> {
    const { partitions } = await this.cluster.topicMetadata(topic);
    const count = partitions.length;
    const available = partitions.filter((partition) => partition.leader >= 0).map((partition) => partition.partition);
    const sizes = records.map((record, index) => {
      const size = recordSize(record) + (this.originHeaders === undefined || (record.headers !== undefined && hasOrigin(record.headers)) ? 0 : this.originHeaderBytes);
      if (size + RECORD_BATCH_OVERHEAD > this.bufferMemory) {
        throw new TributaryError({
          code: 'MESSAGE_TOO_LARGE',
          message: `record ${index} for topic "${topic}" takes ${size} bytes, more than bufferMemory (${this.bufferMemory}): send a smaller record or raise bufferMemory`,
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
    const reservedAll = this.memoryWaiters.length === 0 && this.bufferedBytes + total <= this.bufferMemory;
    if (reservedAll) this.bufferedBytes += total;
    const queues: (PartitionQueue | undefined)[] = [];
    for (let index = 0; index < records.length; index++) {
      const record = records[index] as ProducerRecord;
      const size = sizes[index] ?? 0;
      if (!reservedAll) {
        const waiting = this.reserve(size);
        if (waiting !== undefined) await waiting;
      }
      const partition = record.partition ?? this.partitioner.partition(topic, record.key, count, available);
      const queue = (queues[partition] ??= this.queueFor(topic, partition));
      const headers = this.originHeaders === undefined ? record.headers : withOrigin(record.headers, this.originHeaders);
      const input: RecordInput =
        headers === undefined
          ? { key: record.key ?? null, value: record.value, timestamp: record.timestamp ?? calledAt }
          : { key: record.key ?? null, value: record.value, headers, timestamp: record.timestamp ?? calledAt };
      this.enqueue(queue, input, size, tracker, index);
    }
  }

  private enqueue(queue: PartitionQueue, record: RecordInput, size: number, tracker: SendTracker, index: number): void {
    const { topic, partition } = queue;
    let batch = queue.batches.at(-1);
    if (batch !== undefined && !batch.closed && batch.records.length > 0 && batch.bytes + size > this.batchSize) batch.closed = true;
    if (batch === undefined || batch.closed) {
      batch = newBatch(topic, partition);
      queue.batches.push(batch);
      this.scheduleDrain(this.lingerMs);
    }
    batch.records.push(record);
    const last = batch.deliveries.at(-1);
    if (last !== undefined && last.tracker === tracker && last.first + last.count === index) last.count += 1;
    else batch.deliveries.push({ tracker, first: index, count: 1 });
    batch.bytes += size;
    batch.reserved += size;
    if (batch.bytes >= this.batchSize) {
      batch.closed = true;
      this.scheduleDrain(0);
    }
  }

  private queueFor(topic: string, partition: number): PartitionQueue {
    const key = `${topic}\u0000${partition}`;
    let queue = this.queues.get(key);
    if (queue === undefined) {
      queue = { topic, partition, batches: [], inFlight: [], retryAt: 0 };
      this.queues.set(key, queue);
    }
    return queue;
  }

  /** Takes `bytes` of buffer memory now, or returns a promise that resolves once they were taken. */
  private reserve(bytes: number): Promise<void> | undefined {
    if (this.memoryWaiters.length === 0 && (this.bufferedBytes + bytes <= this.bufferMemory || this.bufferedBytes === 0)) {
      this.bufferedBytes += bytes;
      return undefined;
    }
    // Memory is short: send what is buffered now rather than after lingerMs.
    this.scheduleDrain(0);
    return new Promise((resolve) => this.memoryWaiters.push({ bytes, resolve }));
  }

  private release(bytes: number): void {
    this.bufferedBytes -= bytes;
    for (let waiter = this.memoryWaiters[0]; waiter !== undefined; waiter = this.memoryWaiters[0]) {
      if (this.bufferedBytes + waiter.bytes > this.bufferMemory && this.bufferedBytes > 0) break;
      this.memoryWaiters.shift();
      this.bufferedBytes += waiter.bytes;
      waiter.resolve();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Sending

  private scheduleDrain(delayMs: number): void {
    if (delayMs <= 0) {
      this.drainImmediate ??= setImmediate(() => {
        this.drainImmediate = undefined;
        this.drain();
      });
      return;
    }
    const at = Date.now() + delayMs;
    if (this.drainTimer !== undefined && this.drainAt <= at) return;
    clearTimeout(this.drainTimer);
    this.drainAt = at;
    this.drainTimer = setTimeout(() => {
      this.drainTimer = undefined;
      this.drainAt = Infinity;
      this.drain();
    }, delayMs);
  }

  /** Sends every batch that is ready and allowed to go, grouped into one request per broker. */
  private drain(): void {
    const now = Date.now();
    const urgent = this.flushing > 0 || this.memoryWaiters.length > 0 || this.closing !== undefined;
    /** Per broker, a list of requests; each holds at most one batch per partition. */
    const requests = new Map<number, Batch[][]>();
    let wakeAt = Infinity;
    for (const queue of this.queues.values()) {
      while (queue.inFlight.length < this.maxInFlight) {
        const head = queue.batches[0];
        if (head === undefined) break;
        if (queue.retryAt > now) {
          wakeAt = Math.min(wakeAt, queue.retryAt);
          break;
        }
        if (!head.closed && !urgent && now - head.createdAt < this.lingerMs) {
          wakeAt = Math.min(wakeAt, head.createdAt + this.lingerMs);
          break;
        }
        const leader = this.cluster.leaderFor(queue.topic, queue.partition);
        if (leader === undefined) {
          // Counts as a failed attempt: back to the head of the queue after a backoff.
          queue.batches.shift();
          head.closed = true;
          this.failed(
            queue,
            head,
            new TributaryError({ code: 'LEADER_NOT_AVAILABLE', retriable: true, message: `partition ${queue.partition} of topic "${queue.topic}" has no leader in the metadata` }),
          );
          wakeAt = Math.min(wakeAt, queue.retryAt);
          break;
        }
        queue.batches.shift();
        head.closed = true;
        if (this.maxInFlight === 1) this.mergeQueued(queue, head);
        queue.inFlight.push(head);
        const forBroker = requests.get(leader) ?? [];
        requests.set(leader, forBroker);
        const request = forBroker.find((batches) => !batches.some((batch) => batch.topic === head.topic && batch.partition === head.partition));
        if (request === undefined) forBroker.push([head]);
        else request.push(head);
      }
    }
    for (const [brokerId, batchesPerRequest] of requests) {
      for (const batches of batchesPerRequest) void this.sendRequest(brokerId, batches);
    }
    if (wakeAt !== Infinity) this.scheduleDrain(Math.max(1, wakeAt - now));
  }

  /**
   * With one batch in flight per partition (the price of ordered retries), a partition would pay
   * a round trip per batch. Instead the batches that queued up behind it while it was in flight
   * go out together, merged into one batch of up to `MERGED_BATCH_BYTES`: the same order, fewer
   * round trips. Only batches never sent are merged, so a retry still resends the same bytes.
   */
  private mergeQueued(queue: PartitionQueue, head: Batch): void {
    if (head.encoded !== undefined || head.failures > 0) return;
    for (let next = queue.batches[0]; next !== undefined; next = queue.batches[0]) {
      if (!next.closed || next.encoded !== undefined || next.failures > 0 || head.bytes + next.bytes > MERGED_BATCH_BYTES) break;
      queue.batches.shift();
      for (const record of next.records) head.records.push(record);
      for (const delivery of next.deliveries) head.deliveries.push(delivery);
      head.bytes += next.bytes;
      head.reserved += next.reserved;
      next.reserved = 0;
      const merged = next;
      void head.done.then(() => merged.markDone());
    }
  }

  /**
   * Sends one Produce. Writes to a broker are chained in the order drain made the requests, so
   * pipelined batches of a partition (retries = 0) reach it in order; answers are awaited
   * concurrently. A batch that cannot be encoded fails alone.
   */
  private async sendRequest(brokerId: number, batches: readonly Batch[]): Promise<void> {
    const sent = batches.filter((batch) => {
      try {
        batch.encoded ??= this.encode(batch);
        return true;
      } catch (error) {
        this.failed(this.queueFor(batch.topic, batch.partition), batch, encodingError(batch, error));
        return false;
      }
    });
    if (sent.length === 0) return;
    const request = this.produceRequest(sent);
    const written = (this.brokerTails.get(brokerId) ?? Promise.resolve()).then(() => this.write(brokerId, request));
    const tail = written.then(
      () => undefined,
      () => undefined,
    );
    this.brokerTails.set(brokerId, tail);
    try {
      const { answer } = await written;
      if (answer === undefined) {
        for (const batch of sent) this.delivered(batch, -1n);
      } else {
        this.handleResponse(sent, await answer);
      }
    } catch (error) {
      for (const batch of sent) this.failed(this.queueFor(batch.topic, batch.partition), batch, asError(error));
    } finally {
      if (this.brokerTails.get(brokerId) === tail) this.brokerTails.delete(brokerId);
      this.scheduleDrain(0);
    }
  }

  /** Writes a Produce to the broker; resolves once written, with the pending answer unless acks=0. */
  private async write(brokerId: number, request: ProduceRequest): Promise<{ answer: Promise<ProduceResponse> | undefined }> {
    const connection = await this.cluster.connectionTo(brokerId);
    if (this.acks === 0) {
      await connection.sendWithoutResponse(ProduceApi, PRODUCE_VERSION, request);
      return { answer: undefined };
    }
    const answer = connection.request(ProduceApi, PRODUCE_VERSION, request);
    // sendRequest awaits it next; this only keeps a rejection in between from counting as unhandled.
    answer.catch(() => undefined);
    return { answer };
  }

  private encode(batch: Batch): Buffer {
    return encodeRecordBatch(batch.records, { compression: this.compression });
  }

  private produceRequest(batches: readonly Batch[]): ProduceRequest {
    const byTopic = new Map<string, { index: number; records: Buffer }[]>();
    for (const batch of batches) {
      const partitions = byTopic.get(batch.topic) ?? [];
      byTopic.set(batch.topic, partitions);
      partitions.push({ index: batch.partition, records: batch.encoded ?? Buffer.alloc(0) });
    }
    return {
      transactionalId: null,
      acks: this.acks,
      timeoutMs: this.requestTimeoutMs,
      topicData: [...byTopic].map(([name, partitionData]) => ({ name, partitionData })),
    };
  }

  private handleResponse(batches: readonly Batch[], response: ProduceResponse): void {
    for (const batch of batches) {
      const queue = this.queueFor(batch.topic, batch.partition);
      const answer = response.responses.find((topic) => topic.name === batch.topic)?.partitionResponses.find((partition) => partition.index === batch.partition);
      if (answer === undefined) {
        this.failed(
          queue,
          batch,
          new TributaryError({
            code: 'NETWORK_EXCEPTION',
            retriable: true,
            message: `the Produce answer has no entry for partition ${batch.partition} of topic "${batch.topic}"`,
          }),
        );
      } else if (answer.errorCode === KafkaErrorCode.NONE) {
        this.delivered(batch, answer.baseOffset);
      } else {
        const name = kafkaErrorName(answer.errorCode);
        this.failed(
          queue,
          batch,
          new TributaryError({
            code: name,
            retriable: RETRIABLE_PRODUCE_ERRORS.has(name),
            message: `the broker refused ${batch.records.length} records for partition ${batch.partition} of topic "${batch.topic}" with ${name}${answer.errorMessage === null ? '' : ` (${answer.errorMessage})`}`,
            details: { topic: batch.topic, partition: batch.partition, kafkaCode: answer.errorCode },
          }),
        );
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Outcomes

  private delivered(batch: Batch, baseOffset: bigint): void {
    const queue = this.queueFor(batch.topic, batch.partition);
    removeFrom(queue.inFlight, batch);
    let offsetDelta = 0;
    for (const { tracker, first, count } of batch.deliveries) {
      for (let index = first; index < first + count; index++) {
        tracker.delivered(index, { topic: batch.topic, partition: batch.partition, offset: baseOffset < 0n ? -1n : baseOffset + BigInt(offsetDelta++), baseOffset });
      }
    }
    if (this.onAcknowledged !== undefined) this.notifyAcknowledged(this.onAcknowledged, batch);
    this.finish(batch);
  }

  /** A failed attempt: back to the head of the queue for a retry, or the end of the batch. */
  private failed(queue: PartitionQueue, batch: Batch, error: Error): void {
    removeFrom(queue.inFlight, batch);
    batch.failures += 1;
    const code = error instanceof TributaryError ? error.code : 'UNKNOWN';
    if (STALE_METADATA.has(code)) this.refreshMetadataSoon(batch.topic);
    if (isRetriable(error) && batch.failures <= this.retries) {
      // Nothing behind it was sent (at most one batch in flight), so it goes first again.
      queue.batches.unshift(batch);
      const delay = jitter(Math.min(this.retryBackoffMaxMs, this.retryBackoffMs * 2 ** (batch.failures - 1)));
      queue.retryAt = Math.max(queue.retryAt, Date.now() + delay);
      this.logger?.warn({ topic: batch.topic, partition: batch.partition, attempt: batch.failures, retryInMs: Math.round(delay), err: error }, 'produce failed; retrying');
      this.scheduleDrain(delay);
      return;
    }
    const final = finalError(batch, error, this.retries);
    this.logger?.error({ topic: batch.topic, partition: batch.partition, records: batch.records.length, err: final }, 'produce failed');
    for (const delivery of batch.deliveries) delivery.tracker.failed(final);
    this.finish(batch);
  }

  private notifyAcknowledged(observer: (topic: string, records: readonly AcknowledgedRecord[]) => void, batch: Batch): void {
    try {
      // append gave every record a timestamp.
      observer(batch.topic, batch.records as readonly AcknowledgedRecord[]);
    } catch (error) {
      this.logger?.error({ topic: batch.topic, partition: batch.partition, err: error }, 'onAcknowledged threw; the records were delivered all the same');
    }
  }

  private finish(batch: Batch): void {
    this.release(batch.reserved);
    batch.reserved = 0;
    batch.markDone();
  }

  private refreshMetadataSoon(topic: string): void {
    this.staleTopics.add(topic);
    this.metadataRefresh ??= (async () => {
      try {
        while (this.staleTopics.size > 0) {
          const topics = [...this.staleTopics];
          this.staleTopics.clear();
          await this.cluster.refreshMetadata(topics);
        }
      } catch (error) {
        this.logger?.warn({ err: error }, 'metadata refresh failed; the next retry tries again');
      } finally {
        this.metadataRefresh = undefined;
        this.scheduleDrain(0);
      }
    })();
  }
}

function newBatch(topic: string, partition: number): Batch {
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
    encoded: undefined,
    done,
    markDone,
  };
}

/** The encoded size of a record, near enough for batching and memory accounting. */
function recordSize(record: RecordInput): number {
  let size = RECORD_OVERHEAD + (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const header of record.headers ?? []) size += 10 + Buffer.byteLength(header.key) + (header.value?.length ?? 0);
  return size;
}

function hasOrigin(headers: readonly RecordHeader[]): boolean {
  for (const header of headers) if (header.key === ORIGIN_HEADER) return true;
  return false;
}

/** The record's headers with the origin header added when it has none. */
function withOrigin(headers: readonly RecordHeader[] | undefined, originHeaders: readonly RecordHeader[]): readonly RecordHeader[] {
  if (headers === undefined || headers.length === 0) return originHeaders;
  return hasOrigin(headers) ? headers : [...headers, ...originHeaders];
}

function removeFrom(list: Batch[], batch: Batch): void {
  const index = list.indexOf(batch);
  if (index >= 0) list.splice(index, 1);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new TributaryError({ code: 'UNKNOWN', message: String(error), cause: error });
}

function encodingError(batch: Batch, error: unknown): TributaryError {
  return new TributaryError({
    code: 'ENCODING_FAILED',
    message: `could not build a record batch for partition ${batch.partition} of topic "${batch.topic}": ${error instanceof Error ? error.message : String(error)}`,
    cause: error,
    details: { topic: batch.topic, partition: batch.partition },
  });
}

/** The error the sends of a given-up batch reject with: the Kafka error name, and what to do. */
function finalError(batch: Batch, error: Error, retries: number): TributaryError {
  const code = error instanceof TributaryError ? error.code : 'UNKNOWN';
  const where = `${batch.records.length} records for partition ${batch.partition} of topic "${batch.topic}"`;
  const retriable = isRetriable(error);
  const advice = retriable
    ? `gave up after ${batch.failures} attempts (retries: ${retries}); ${ADVICE[code] ?? 'the broker may be down or overloaded: check it, or raise retries'}`
    : (ADVICE[code] ?? 'see the broker log');
  return new TributaryError({
    code,
    retriable,
    message: `could not deliver ${where}: ${error.message}; ${advice}`,
    cause: error,
    details: { topic: batch.topic, partition: batch.partition, records: batch.records.length, attempts: batch.failures },
  });
}

function validateOptions(producer: Producer): void {
  const problems: string[] = [];
  if (producer.acks !== 0 && producer.acks !== 1 && producer.acks !== -1) problems.push(`acks must be -1, 0 or 1, not ${String(producer.acks)}`);
  if (!Object.hasOwn(Compression, producer.compression)) problems.push(`compression must be one of ${Object.keys(Compression).join(', ')}, not ${producer.compression}`);
  for (const [name, value, min] of [
    ['batchSize', producer.batchSize, 1],
    ['lingerMs', producer.lingerMs, 0],
    ['bufferMemory', producer.bufferMemory, 1024],
    ['retries', producer.retries, 0],
  ] as const) {
    if (!Number.isInteger(value) || value < min) problems.push(`${name} must be an integer ≥ ${min}, not ${value}`);
  }
  if (problems.length > 0) throw new TributaryError({ code: 'CONFIG_INVALID', message: `producer options: ${problems.join('; ')}` });
}
