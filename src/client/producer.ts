/**
 * The producer: `send(topic, records)` resolves once every record of the call is acknowledged as
 * `acks` asks (−1: stored and flushed; 1: stored by the leader; 0: written to the socket).
 *
 *   send ─▶ partitioner ─▶ RecordAccumulator ─────────▶ Sender ─────────────▶ one Produce per broker
 *                          (a queue of batches per      (drains ready batches,  (at most one batch per
 *                           partition, buffer memory)    retries, ordering)      partition in it)
 *
 * - **Idempotence** (default on, as in the Java client ≥ 3.0): the producer gets a producer id
 *   (InitProducerId) and numbers each partition's batches, so the broker can drop a batch it
 *   already stored: a retry after a lost answer no longer stores records twice, and up to 5
 *   batches per partition are in flight without reordering. It needs acks = −1 and retries > 0;
 *   leaving `idempotent` unset with acks 0/1 or retries 0 turns it off (as the Java client does),
 *   setting it to true with them is a configuration error.
 * - **Batching** (record-accumulator.ts): records join the newest batch of their partition until
 *   `batchSize`; a batch is sent when full, when `lingerMs` old, on `flush()`/`close()`, or at once
 *   when `send` waits for buffer memory. Records count against `bufferMemory` from `send` until
 *   acknowledged or failed; sends are taken in call order.
 * - **Sending, retries, ordering** (sender.ts): see there. Records of a partition are stored in
 *   send order; a non-retriable error, or a retriable one after `retries`, rejects the sends whose
 *   records were in the batch with a TributaryError whose code is the Kafka error name.
 */
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { Compression, type CompressionName } from '../protocol/record-batch.js';
import type { RecordHeader } from '../protocol/records.js';
import { ClusterClient, type ClusterClientOptions } from './cluster-client.js';
import type { ClientSecurity } from './security-config.js';
import { Partitioner, type NullKeyStrategy } from './partitioner.js';
import { SendTracker, type AcknowledgedRecord, type RecordMetadata } from './producer/delivery.js';
import { asError } from './producer/produce-errors.js';
import { RecordAccumulator, type ProducerRecord } from './producer/record-accumulator.js';
import { Sender } from './producer/sender.js';

export { PRODUCE_VERSION } from './producer/sender.js';
export type { AcknowledgedRecord, RecordMetadata } from './producer/delivery.js';
export type { ProducerRecord } from './producer/record-accumulator.js';

export type Acks = 0 | 1 | -1;
/** none, gzip, snappy, lz4 (and zstd, which needs Produce v7+ at the broker). */
export type CompressionCodec = CompressionName;

/** The record header naming the server a record was created on (the audit counts by it). */
export const ORIGIN_HEADER = 'tributary.origin';

/** Java's default: retries are bounded by the delivery timeout, not by a count. */
const DEFAULT_RETRIES = 2_147_483_647;

export interface ProducerOptions {
  /** −1 (all, default), 1 (leader) or 0 (none, no answer). */
  readonly acks?: Acks;
  /**
   * Let the broker drop duplicates of retried batches (needs acks −1, retries > 0 and a broker
   * that serves InitProducerId). Default: on, unless acks or retries rule it out.
   */
  readonly idempotent?: boolean;
  readonly compression?: CompressionCodec;
  /** Bytes of records per batch before it is sent; default 16384. */
  readonly batchSize?: number;
  /** How long a batch waits for more records; default 5 ms. */
  readonly lingerMs?: number;
  /** Bytes of records held before `send` waits for acknowledgements; default 32 MiB. */
  readonly bufferMemory?: number;
  /**
   * Times a batch is sent again after a retriable failure; default unbounded (2147483647, as
   * Java's), so `deliveryTimeoutMs` is the bound: a leader failover (a session timeout and an
   * election) is ridden out without any setting.
   */
  readonly retries?: number;
  /** How long a batch may take, retries included, before its sends fail; default 120 s (Java's delivery.timeout.ms). */
  readonly deliveryTimeoutMs?: number;
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
  /** TLS and SASL of its broker connections (security-config.ts). */
  readonly security?: ClientSecurity;
}

export class Producer {
  readonly acks: Acks;
  readonly idempotent: boolean;
  readonly compression: CompressionCodec;
  readonly batchSize: number;
  readonly lingerMs: number;
  readonly bufferMemory: number;
  readonly retries: number;
  private readonly accumulator: RecordAccumulator;
  private readonly sender: Sender;
  /** Appends run one `send` after another, in call order. */
  private appendTail: Promise<void> = Promise.resolve();
  private flushing = 0;
  private closing: Promise<void> | undefined;

  /**
   * A producer on `cluster`. An idempotent one gets its producer id when it first sends (a broker
   * that cannot give one fails those sends); `Producer.connect` gets it up front instead.
   */
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
    this.retries = options.retries ?? DEFAULT_RETRIES;
    this.idempotent = options.idempotent ?? (this.acks === -1 && this.retries > 0);
    validateOptions(this, options);
    const originHeaders: readonly RecordHeader[] | undefined = options.origin === undefined ? undefined : [{ key: ORIGIN_HEADER, value: Buffer.from(options.origin, 'utf8') }];
    const partitioner = options.partitioner instanceof Partitioner ? options.partitioner : new Partitioner({ nullKeys: options.partitioner ?? 'round-robin' });
    this.accumulator = new RecordAccumulator({
      cluster,
      partitioner,
      batchSize: this.batchSize,
      lingerMs: this.lingerMs,
      bufferMemory: this.bufferMemory,
      originHeaders,
      originHeaderKey: ORIGIN_HEADER,
      wake: (delayMs) => this.sender.scheduleDrain(delayMs),
    });
    this.sender = new Sender({
      cluster,
      accumulator: this.accumulator,
      acks: this.acks,
      compression: this.compression,
      lingerMs: this.lingerMs,
      retries: this.retries,
      deliveryTimeoutMs: options.deliveryTimeoutMs ?? 120_000,
      retryBackoffMs: options.retryBackoffMs ?? 100,
      retryBackoffMaxMs: options.retryBackoffMaxMs ?? 1000,
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      idempotent: this.idempotent,
      urgent: () => this.flushing > 0 || this.closing !== undefined,
      onAcknowledged: options.onAcknowledged,
      logger: options.logger,
    });
  }

  /** A producer with its own cluster client, closed with it; an idempotent one has its producer id. */
  static async connect(options: ProducerConnectOptions): Promise<Producer> {
    const clusterOptions: ClusterClientOptions = {
      bootstrap: options.bootstrap,
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
      ...(options.allowAutoTopicCreation === undefined ? {} : { allowAutoTopicCreation: options.allowAutoTopicCreation }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.security === undefined ? {} : { security: options.security }),
    };
    const cluster = await ClusterClient.connect(clusterOptions);
    try {
      const producer = new Producer(cluster, options, true);
      await producer.sender.initProducerId();
      return producer;
    } catch (error) {
      cluster.close();
      throw error;
    }
  }

  /** Bytes of records accepted and not yet acknowledged or failed. */
  get buffered(): number {
    return this.accumulator.buffered;
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
      const appended = this.appendTail.then(() => this.accumulator.append(topic, records, tracker, calledAt));
      this.appendTail = appended.catch((error: unknown) => tracker.failed(asError(error)));
    });
  }

  /** Sends everything accepted so far now, and waits until all of it is acknowledged or failed. */
  async flush(): Promise<void> {
    this.flushing += 1;
    try {
      await this.appendTail;
      const pending = this.accumulator.pending();
      this.sender.scheduleDrain(0);
      await Promise.all(pending);
    } finally {
      this.flushing -= 1;
    }
  }

  /** Refuses new sends, delivers (or fails) what was accepted, and closes an owned cluster client. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.flush();
      this.sender.stop();
      if (this.ownsCluster) this.cluster.close();
    })();
    return this.closing;
  }
}

function validateOptions(producer: Producer, options: ProducerOptions): void {
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
  // As the Java client: an explicit idempotent: true that other options contradict is an error.
  if (options.idempotent === true && producer.acks !== -1) problems.push(`idempotent: true needs acks -1, not ${String(producer.acks)} (or set idempotent: false)`);
  if (options.idempotent === true && producer.retries === 0) problems.push('idempotent: true needs retries > 0 (or set idempotent: false)');
  if (problems.length > 0) throw new TributaryError({ code: 'CONFIG_INVALID', message: `producer options: ${problems.join('; ')}` });
}
