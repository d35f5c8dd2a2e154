/**
 * The sender drains the accumulator's queues into Produce requests, one per broker (at most one
 * batch per partition in each), and turns the answers into deliveries, retries or failures.
 *
 * - **Ordering.** Writes to a broker are chained in the order the drain made them, so the
 *   batches of a partition reach it in order; answers are awaited concurrently.
 * - **Without idempotence** (`retries` > 0) a partition has one batch in flight. A batch that
 *   fails retriably goes back to the head of its queue and is sent again, byte for byte, after a
 *   backoff; nothing behind it goes first. (A lost answer after a stored batch can store it twice,
 *   next to each other: at least once, never reordered.) With `retries` = 0 up to 5 batches per
 *   partition are pipelined.
 * - **With idempotence** up to 5 batches per partition are in flight, each numbered when first
 *   drained (producer-sequences.ts). A failed batch goes back into its queue in sequence order,
 *   and a batch with numbers is sent only as the first outstanding one of its partition or right
 *   behind the last one in flight: after a failure, the later batches in flight come back too
 *   (the broker refuses a gap with OUT_OF_ORDER_SEQUENCE_NUMBER) and all are sent again in
 *   sequence order. The broker answers a resent batch it already stored with success and the
 *   original offset, so a lost answer no longer stores a batch twice.
 * - **Failures.** NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE and a
 *   lost connection refresh the topic's metadata before the retry. A non-retriable error, or a
 *   retriable one after `retries` or once the batch is older than the delivery timeout, rejects
 *   the sends whose records were in the batch.
 */
import { TributaryError, isRetriable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { ProduceApi, type ProduceRequest, type ProduceResponse } from '../../protocol/apis/produce.js';
import { KafkaErrorCode, kafkaErrorName } from '../../protocol/kafka-errors.js';
import type { CompressionName } from '../../protocol/record-batch.js';
import { encodeRecordBatch } from '../../protocol/records.js';
import { jitter, type ClusterClient } from '../cluster-client.js';
import { removeFrom, type PartitionQueue, type ProducerBatch } from './batch.js';
import { reportDelivered, reportFailed, type AcknowledgedObserver } from './delivery.js';
import { STALE_METADATA, RETRIABLE_PRODUCE_ERRORS, asError, encodingError, errorCode, finalError, mayHaveBeenStored } from './produce-errors.js';
import { requestProducerId } from './producer-id.js';
import { ProducerSequences, comesBefore, follows } from './producer-sequences.js';
import type { RecordAccumulator } from './record-accumulator.js';

/** Produce v8: v7 plus the broker's error message per partition (non-flexible; Kafka 2.4+). */
export const PRODUCE_VERSION = 8;
/** Kafka's bound for an idempotent producer (max.in.flight.requests.per.connection ≤ 5): the broker remembers 5 batches. */
const MAX_IN_FLIGHT_PER_PARTITION = 5;
/** Largest batch made by merging queued batches: below the default max.message.bytes (1 MiB). */
const MERGED_BATCH_BYTES = 512 * 1024;

export interface SenderOptions {
  readonly cluster: ClusterClient;
  readonly accumulator: RecordAccumulator;
  readonly acks: number;
  readonly compression: CompressionName;
  readonly lingerMs: number;
  readonly retries: number;
  /** A batch older than this is not retried again (Java's delivery.timeout.ms). */
  readonly deliveryTimeoutMs: number;
  readonly retryBackoffMs: number;
  readonly retryBackoffMaxMs: number;
  readonly requestTimeoutMs: number;
  readonly idempotent: boolean;
  /** Batches should go now, whatever their linger: flush, close. */
  readonly urgent: () => boolean;
  readonly onAcknowledged: AcknowledgedObserver | undefined;
  readonly logger: Logger | undefined;
}

export class Sender {
  private readonly maxInFlight: number;
  /** Idempotent producers only. */
  private readonly sequences: ProducerSequences | undefined;
  private producerIdRequest: Promise<void> | undefined;
  private producerIdRetry: NodeJS.Timeout | undefined;
  private producerIdFailures = 0;
  /** When the current run of InitProducerId failures began. */
  private producerIdFailingSince = 0;
  /** Why the producer can send nothing at all (a broker without InitProducerId). */
  private fatal: Error | undefined;
  private drainTimer: NodeJS.Timeout | undefined;
  private drainAt = Infinity;
  private drainImmediate: NodeJS.Immediate | undefined;
  private readonly staleTopics = new Set<string>();
  private metadataRefresh: Promise<void> | undefined;
  /** Per broker: the end of the chain that writes its requests in order. */
  private readonly brokerTails = new Map<number, Promise<void>>();
  private stopped = false;

  constructor(private readonly options: SenderOptions) {
    this.sequences = options.idempotent ? new ProducerSequences() : undefined;
    this.maxInFlight = options.idempotent || options.retries === 0 ? MAX_IN_FLIGHT_PER_PARTITION : 1;
  }

  /** Gets the producer id now (idempotent producers), so that a broker without it fails here. */
  async initProducerId(): Promise<void> {
    if (this.sequences === undefined) return;
    const attempts = this.options.retries + 1;
    const deadline = Date.now() + this.options.deliveryTimeoutMs;
    for (let attempt = 1; ; attempt += 1) {
      try {
        this.sequences.setProducerId(await requestProducerId(this.options.cluster));
        return;
      } catch (error) {
        if (!isRetriable(error) || attempt >= attempts || Date.now() >= deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, this.backoff(attempt)));
      }
    }
  }

  scheduleDrain(delayMs: number): void {
    if (this.stopped) return;
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

  stop(): void {
    this.stopped = true;
    clearTimeout(this.drainTimer);
    clearTimeout(this.producerIdRetry);
    if (this.drainImmediate !== undefined) clearImmediate(this.drainImmediate);
  }

  /** Sends every batch that is ready and allowed to go, grouped into one request per broker. */
  private drain(): void {
    const now = Date.now();
    const urgent = this.options.urgent() || this.options.accumulator.memoryShort;
    /** Per broker, a list of requests; each holds at most one batch per partition. */
    const requests = new Map<number, ProducerBatch[][]>();
    let wakeAt = Infinity;
    for (const queue of this.options.accumulator.queues.values()) {
      if (this.sequences !== undefined && !this.readyForIdempotentSend(queue, this.sequences)) continue;
      while (queue.inFlight.length < this.maxInFlight) {
        const head = queue.batches[0];
        if (head === undefined) break;
        if (queue.retryAt > now) {
          wakeAt = Math.min(wakeAt, queue.retryAt);
          break;
        }
        if (!head.closed && !urgent && now - head.createdAt < this.options.lingerMs) {
          wakeAt = Math.min(wakeAt, head.createdAt + this.options.lingerMs);
          break;
        }
        if (this.sequences !== undefined && !this.mayGoNext(queue, head, this.sequences)) break;
        const leader = this.options.cluster.leaderFor(queue.topic, queue.partition);
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
        if (head.identity === undefined) this.mergeQueued(queue, head);
        // Numbers are given here, once: from now on the batch is resent only as it is.
        if (this.sequences !== undefined) head.identity ??= this.sequences.number(queue.key, head.records.length);
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
   * Before an idempotent partition sends: a producer id must be known, and a partition that
   * needs a new epoch gets it once nothing of it is in flight, its waiting batches renumbered
   * from 0 (the broker has just said it does not have them).
   */
  private readyForIdempotentSend(queue: PartitionQueue, sequences: ProducerSequences): boolean {
    if (this.fatal !== undefined) {
      const fatal = this.fatal;
      for (const batch of queue.batches.splice(0)) this.giveUp(queue, batch, fatal);
      return false;
    }
    if (queue.batches.length === 0) return false;
    if (sequences.current === undefined) {
      this.fetchProducerId(sequences);
      return false;
    }
    const outstanding = queue.inFlight.length > 0 || queue.batches[0]?.identity !== undefined;
    if (!outstanding) sequences.settle(queue.key);
    if (!sequences.needsNewEpoch(queue.key)) return true;
    if (queue.inFlight.length > 0) return false;
    if (!sequences.startNewEpoch(queue.key)) {
      this.fetchProducerId(sequences);
      return false;
    }
    let renumbered = 0;
    for (const batch of queue.batches) {
      if (batch.identity === undefined) break;
      batch.identity = sequences.number(queue.key, batch.records.length);
      batch.encoded = undefined;
      renumbered += 1;
    }
    this.options.logger?.warn(
      { topic: queue.topic, partition: queue.partition, producerId: sequences.current?.producerId.toString(), epoch: sequences.current?.epoch, renumbered },
      'idempotent producer: the broker lost track of this partition\'s sequence; continuing in a new epoch from sequence 0',
    );
    return true;
  }

  /**
   * A batch with numbers (a retry) goes only first or right behind its predecessor in flight;
   * a new batch waits while the partition is sorting out a failure.
   */
  private mayGoNext(queue: PartitionQueue, head: ProducerBatch, sequences: ProducerSequences): boolean {
    const last = queue.inFlight.at(-1);
    if (head.identity !== undefined) return last?.identity === undefined || follows(last.identity, last.records.length, head.identity);
    return sequences.mayNumber(queue.key, last !== undefined);
  }

  /** One InitProducerId at a time; a retriable failure is tried again after a backoff. */
  private fetchProducerId(sequences: ProducerSequences): void {
    if (this.producerIdRequest !== undefined || this.producerIdRetry !== undefined) return;
    const before = sequences.current;
    this.producerIdRequest = (async () => {
      try {
        sequences.setProducerId(await requestProducerId(this.options.cluster));
        this.producerIdFailures = 0;
        this.options.logger?.info({ producerId: sequences.current?.producerId.toString(), previous: before?.producerId.toString() }, 'idempotent producer: got a producer id');
      } catch (error) {
        this.producerIdFailures += 1;
        if (this.producerIdFailures === 1) this.producerIdFailingSince = Date.now();
        if (isRetriable(error) && (this.producerIdFailures > this.options.retries || Date.now() - this.producerIdFailingSince >= this.options.deliveryTimeoutMs)) {
          // As a batch would after `retries`: the waiting sends fail, later ones try again.
          this.producerIdFailures = 0;
          this.options.logger?.error({ err: error }, 'idempotent producer: no producer id after retries; failing the waiting sends');
          for (const queue of this.options.accumulator.queues.values()) for (const batch of queue.batches.splice(0)) this.giveUp(queue, batch, asError(error));
        } else if (isRetriable(error)) {
          const delay = this.backoff(this.producerIdFailures);
          this.options.logger?.warn({ err: error, retryInMs: Math.round(delay) }, 'idempotent producer: InitProducerId failed; retrying');
          this.producerIdRetry = setTimeout(() => {
            this.producerIdRetry = undefined;
            this.scheduleDrain(0);
          }, delay);
        } else {
          this.fatal = asError(error);
          this.options.logger?.error({ err: error }, 'idempotent producer: cannot get a producer id; every send fails');
        }
      } finally {
        this.producerIdRequest = undefined;
        this.scheduleDrain(0);
      }
    })();
  }

  /**
   * Batches that queued up while the partition had its fill in flight go out together, merged
   * into one batch of up to `MERGED_BATCH_BYTES`: the same order, fewer round trips (and, with
   * acks −1, fewer flushes to wait for). With one batch in flight per partition (non-idempotent
   * ordered retries) this is what keeps a partition from paying a round trip per batch. Only
   * batches never sent and not yet numbered are merged, so a retry resends the same bytes with
   * the same sequence. With retries 0 nothing is merged (they pipeline instead), as before.
   */
  private mergeQueued(queue: PartitionQueue, head: ProducerBatch): void {
    if (this.maxInFlight > 1 && this.sequences === undefined) return;
    if (head.encoded !== undefined || head.failures > 0 || head.identity !== undefined) return;
    for (let next = queue.batches[0]; next !== undefined; next = queue.batches[0]) {
      if (!next.closed || next.encoded !== undefined || next.identity !== undefined || next.failures > 0 || head.bytes + next.bytes > MERGED_BATCH_BYTES) break;
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

  /** Sends one Produce, chained behind the broker's earlier writes. A batch that cannot be encoded fails alone. */
  private async sendRequest(brokerId: number, batches: readonly ProducerBatch[]): Promise<void> {
    const sent = batches.filter((batch) => {
      try {
        batch.encoded ??= this.encode(batch);
        return true;
      } catch (error) {
        this.failed(this.queueOf(batch), batch, encodingError(batch, error));
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
      for (const batch of sent) this.failed(this.queueOf(batch), batch, asError(error));
    } finally {
      if (this.brokerTails.get(brokerId) === tail) this.brokerTails.delete(brokerId);
      this.scheduleDrain(0);
    }
  }

  /** Writes a Produce to the broker; resolves once written, with the pending answer unless acks=0. */
  private async write(brokerId: number, request: ProduceRequest): Promise<{ answer: Promise<ProduceResponse> | undefined }> {
    const connection = await this.options.cluster.connectionTo(brokerId);
    if (this.options.acks === 0) {
      await connection.sendWithoutResponse(ProduceApi, PRODUCE_VERSION, request);
      return { answer: undefined };
    }
    const answer = connection.request(ProduceApi, PRODUCE_VERSION, request);
    // sendRequest awaits it next; this only keeps a rejection in between from counting as unhandled.
    answer.catch(() => undefined);
    return { answer };
  }

  private encode(batch: ProducerBatch): Buffer {
    const identity = batch.identity;
    return encodeRecordBatch(
      batch.records,
      identity === undefined
        ? { compression: this.options.compression }
        : { compression: this.options.compression, producerId: identity.producerId, producerEpoch: identity.epoch, baseSequence: identity.baseSequence },
    );
  }

  private produceRequest(batches: readonly ProducerBatch[]): ProduceRequest {
    const byTopic = new Map<string, { index: number; records: Buffer }[]>();
    for (const batch of batches) {
      const partitions = byTopic.get(batch.topic) ?? [];
      byTopic.set(batch.topic, partitions);
      partitions.push({ index: batch.partition, records: batch.encoded ?? Buffer.alloc(0) });
    }
    return {
      transactionalId: null,
      acks: this.options.acks,
      timeoutMs: this.options.requestTimeoutMs,
      topicData: [...byTopic].map(([name, partitionData]) => ({ name, partitionData })),
    };
  }

  private handleResponse(batches: readonly ProducerBatch[], response: ProduceResponse): void {
    for (const batch of batches) {
      const queue = this.queueOf(batch);
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
      } else if (answer.errorCode === KafkaErrorCode.NONE || (answer.errorCode === KafkaErrorCode.DUPLICATE_SEQUENCE_NUMBER && batch.identity !== undefined)) {
        // DUPLICATE_SEQUENCE_NUMBER (old brokers only): stored before, offset unknown; success all the same.
        this.delivered(batch, answer.errorCode === KafkaErrorCode.NONE ? answer.baseOffset : -1n);
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

  private delivered(batch: ProducerBatch, baseOffset: bigint): void {
    removeFrom(this.queueOf(batch).inFlight, batch);
    if (this.sequences !== undefined && batch.identity !== undefined) this.sequences.acknowledged(this.queueOf(batch).key, batch.identity, batch.records.length);
    reportDelivered(batch, baseOffset, this.options.onAcknowledged, this.options.logger);
    this.finish(batch);
  }

  /** A failed attempt: back into the queue for a retry, or the end of the batch. */
  private failed(queue: PartitionQueue, batch: ProducerBatch, error: Error): void {
    removeFrom(queue.inFlight, batch);
    const code = errorCode(error);
    if (STALE_METADATA.has(code)) this.refreshMetadataSoon(batch.topic);
    let retriable = isRetriable(error);
    let counts = true;
    if (this.sequences !== undefined && batch.identity !== undefined && (code === 'OUT_OF_ORDER_SEQUENCE_NUMBER' || code === 'UNKNOWN_PRODUCER_ID')) {
      const verdict = this.sequences.sequenceError(queue.key, batch.identity, code === 'UNKNOWN_PRODUCER_ID' ? 'unknown-producer' : 'out-of-order');
      retriable = verdict !== 'fatal';
      // Refused only because an earlier batch is missing: not this batch's failure, as long as
      // that earlier batch is still on its way (otherwise it counts, so this cannot loop).
      counts = verdict !== 'retry-behind-earlier' || !this.hasEarlierOutstanding(queue, batch);
    }
    if (counts) batch.failures += 1;
    if (retriable && batch.failures <= this.options.retries && Date.now() - batch.createdAt < this.options.deliveryTimeoutMs) {
      this.requeue(queue, batch);
      if (counts) {
        const delay = this.backoff(batch.failures);
        queue.retryAt = Math.max(queue.retryAt, Date.now() + delay);
        this.options.logger?.warn({ topic: batch.topic, partition: batch.partition, attempt: batch.failures, retryInMs: Math.round(delay), err: error }, 'produce failed; retrying');
        this.scheduleDrain(delay);
      } else {
        this.scheduleDrain(0);
      }
      return;
    }
    this.giveUp(queue, batch, error);
  }

  private giveUp(queue: PartitionQueue, batch: ProducerBatch, error: Error): void {
    const final = finalError(batch, error, this.options.retries, this.options.deliveryTimeoutMs);
    this.options.logger?.error({ topic: batch.topic, partition: batch.partition, records: batch.records.length, err: final }, 'produce failed');
    if (this.sequences !== undefined && batch.identity !== undefined) this.sequences.gaveUp(queue.key, batch.identity, batch.records.length, mayHaveBeenStored(error));
    reportFailed(batch, final);
    this.finish(batch);
  }

  /** A retry goes before everything never sent, and among numbered batches by its sequence. */
  private requeue(queue: PartitionQueue, batch: ProducerBatch): void {
    const identity = batch.identity;
    if (identity === undefined) {
      // Without idempotence nothing behind it was sent (at most one batch in flight), so it goes first again.
      queue.batches.unshift(batch);
      return;
    }
    let index = 0;
    while (index < queue.batches.length) {
      const other = queue.batches[index]?.identity;
      if (other === undefined || comesBefore(identity, other)) break;
      index += 1;
    }
    queue.batches.splice(index, 0, batch);
  }

  private hasEarlierOutstanding(queue: PartitionQueue, batch: ProducerBatch): boolean {
    const identity = batch.identity;
    if (identity === undefined) return false;
    return [...queue.inFlight, ...queue.batches].some((other) => other !== batch && other.identity !== undefined && comesBefore(other.identity, identity));
  }

  private finish(batch: ProducerBatch): void {
    this.options.accumulator.release(batch.reserved);
    batch.reserved = 0;
    batch.markDone();
  }

  private backoff(attempt: number): number {
    return jitter(Math.min(this.options.retryBackoffMaxMs, this.options.retryBackoffMs * 2 ** (attempt - 1)));
  }

  private queueOf(batch: ProducerBatch): PartitionQueue {
    return this.options.accumulator.queueFor(batch.topic, batch.partition);
  }

  private refreshMetadataSoon(topic: string): void {
    this.staleTopics.add(topic);
    this.metadataRefresh ??= (async () => {
      try {
        while (this.staleTopics.size > 0) {
          const topics = [...this.staleTopics];
          this.staleTopics.clear();
          await this.options.cluster.refreshMetadata(topics);
        }
      } catch (error) {
        this.options.logger?.warn({ err: error }, 'metadata refresh failed; the next retry tries again');
      } finally {
        this.metadataRefresh = undefined;
        this.scheduleDrain(0);
      }
    })();
  }
}
