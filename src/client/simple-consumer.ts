/**
 * The simple consumer of the paper (§3.2): the application names the partition and the offset,
 * and gets the records from there. No group, no stored position: the broker keeps no consumer
 * state, the consumer keeps its own offset.
 */
import { TributaryError } from '../common/errors.js';
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListOffsetsApi } from '../protocol/apis/list-offsets.js';
import { FetchApi } from '../protocol/apis/fetch.js';
import { KafkaErrorCode, kafkaErrorName } from '../protocol/kafka-errors.js';
import { BATCH_LENGTH_OFFSET, LAST_OFFSET_DELTA_OFFSET, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from '../protocol/record-batch.js';
import { decodeRecords, type Record as KafkaRecord } from '../protocol/records.js';
import type { KafkaConnection } from './connection.js';

/** What the simple consumer needs from the cluster: the connection to a partition's leader. */
export interface LeaderConnections {
  leaderConnection(topic: string, partition: number): Promise<KafkaConnection>;
  refreshMetadata(topics?: readonly string[]): Promise<unknown>;
}

export interface FetchOptions {
  readonly maxBytes?: number;
  /** How long the broker may wait for new records (long poll); 0 answers at once. */
  readonly maxWaitMs?: number;
  readonly minBytes?: number;
}

export interface FetchResult {
  /** Records at or after the requested offset, in offset order. */
  readonly records: readonly KafkaRecord[];
  /** The offset to fetch next. */
  readonly nextOffset: bigint;
  readonly highWatermark: bigint;
  readonly logStartOffset: bigint;
}

export type OffsetSpec = 'earliest' | 'latest' | { readonly timestamp: number };

/**
 * Leadership moved or is being established (a failover: the old leader's session must time out
 * and the controller elect another): refresh metadata and try again.
 */
const LEADERSHIP_ERRORS = new Set<number>([
  KafkaErrorCode.NOT_LEADER_OR_FOLLOWER,
  KafkaErrorCode.LEADER_NOT_AVAILABLE,
  KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  KafkaErrorCode.FENCED_LEADER_EPOCH,
  KafkaErrorCode.UNKNOWN_LEADER_EPOCH,
  KafkaErrorCode.REPLICA_NOT_AVAILABLE,
  KafkaErrorCode.KAFKA_STORAGE_ERROR,
]);

/** Client-side failures of a request to a broker that may have died: find the leader again. */
const CONNECTION_FAILURES = new Set(['CONNECTION_LOST', 'BROKER_UNREACHABLE', 'BROKER_NOT_AVAILABLE', 'REQUEST_TIMED_OUT', 'LEADER_NOT_AVAILABLE']);

/**
 * How long a request keeps looking for a leader: longer than a failover (session timeout +
 * election, and the new leader's followers catching up or leaving the ISR). Other readers that
 * ride out failovers (the loader) use the same budget.
 */
export const FAILOVER_RETRY_TIMEOUT_MS = 60_000;

export class SimpleConsumer {
  constructor(
    private readonly cluster: LeaderConnections,
    private readonly options: {
      /** Retries after leadership errors before giving up, whichever of this and `retryTimeoutMs` comes first. */
      readonly retries?: number;
      readonly retryBackoffMs?: number;
      /** How long to keep retrying through a failover (default 60 s). */
      readonly retryTimeoutMs?: number;
    } = {},
  ) {}

  /** Records of `topic`/`partition` from `offset`; an offset outside the log is OFFSET_OUT_OF_RANGE. */
  async fetch(topic: string, partition: number, offset: bigint, options: FetchOptions = {}): Promise<FetchResult> {
    const maxBytes = options.maxBytes ?? 1024 * 1024;
    return this.withLeader(topic, partition, async (connection) => {
      const response = await connection.request(FetchApi, 11, {
        replicaId: -1,
        maxWaitMs: options.maxWaitMs ?? 0,
        minBytes: options.minBytes ?? 1,
        maxBytes,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [{ topic, partitions: [{ partition, currentLeaderEpoch: -1, fetchOffset: offset, logStartOffset: -1n, partitionMaxBytes: maxBytes }] }],
        forgottenTopicsData: [],
        rackId: '',
      });
      const answer = response.responses[0]?.partitions[0];
      if (answer === undefined) throw protocolError(topic, partition, 'the broker answered a fetch without the partition');
      if (answer.errorCode !== 0) return { errorCode: answer.errorCode, details: { highWatermark: answer.highWatermark, logStartOffset: answer.logStartOffset } };
      const bytes = Buffer.isBuffer(answer.records) ? answer.records : Buffer.alloc(0);
      const positions = wholeBatches(bytes);
      const records = positions.flatMap((position) => decodeRecords(bytes, position)).filter((record) => record.offset >= offset);
      // The next offset follows the last batch, not its last record: on a compacted topic a batch
      // may end in removed records, or hold none, and must still be stepped over (Kafka's rule).
      const lastBatch = positions.at(-1);
      const batchEnd = lastBatch === undefined ? offset : bytes.readBigInt64BE(lastBatch) + BigInt(bytes.readInt32BE(lastBatch + LAST_OFFSET_DELTA_OFFSET)) + 1n;
      const nextOffset = batchEnd > offset ? batchEnd : offset;
      return {
        errorCode: 0,
        value: { records, nextOffset, highWatermark: answer.highWatermark, logStartOffset: answer.logStartOffset },
      };
    });
  }

  /** The log start, the high watermark, or the first offset whose record is at or after a time (−1 if none). */
  async listOffset(topic: string, partition: number, spec: OffsetSpec): Promise<bigint> {
    const timestamp = spec === 'earliest' ? EARLIEST_TIMESTAMP : spec === 'latest' ? LATEST_TIMESTAMP : BigInt(spec.timestamp);
    return this.withLeader(topic, partition, async (connection) => {
      const response = await connection.request(ListOffsetsApi, 5, {
        replicaId: -1,
        isolationLevel: 0,
        topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp }] }],
      });
      const answer = response.topics[0]?.partitions[0];
      if (answer === undefined) throw protocolError(topic, partition, 'the broker answered ListOffsets without the partition');
      return answer.errorCode === 0 ? { errorCode: 0, value: answer.offset } : { errorCode: answer.errorCode, details: {} };
    });
  }

  private async withLeader<T>(
    topic: string,
    partition: number,
    attempt: (connection: KafkaConnection) => Promise<{ errorCode: 0; value: T } | { errorCode: number; details: Record<string, unknown> }>,
  ): Promise<T> {
    const retries = this.options.retries ?? 100;
    const deadline = Date.now() + (this.options.retryTimeoutMs ?? FAILOVER_RETRY_TIMEOUT_MS);
    const backoff = (tries: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.min((this.options.retryBackoffMs ?? 200) * 2 ** tries, 1_000)));
    for (let tries = 0; ; tries += 1) {
      let outcome: { errorCode: 0; value: T } | { errorCode: number; details: Record<string, unknown> };
      try {
        const connection = await this.cluster.leaderConnection(topic, partition);
        outcome = await attempt(connection);
      } catch (error) {
        // The leader died under the request, or none is elected yet: ask again after a pause.
        if (!(error instanceof TributaryError) || !CONNECTION_FAILURES.has(error.code) || tries >= retries || Date.now() >= deadline) throw error;
        await backoff(tries);
        await this.cluster.refreshMetadata([topic]).catch(() => undefined);
        continue;
      }
      if (outcome.errorCode === 0) return (outcome as { value: T }).value;
      const name = kafkaErrorName(outcome.errorCode);
      if (LEADERSHIP_ERRORS.has(outcome.errorCode) && tries < retries && Date.now() < deadline) {
        await backoff(tries);
        await this.cluster.refreshMetadata([topic]).catch(() => undefined);
        continue;
      }
      const details = 'details' in outcome ? outcome.details : {};
      throw new TributaryError({
        code: name,
        retriable: LEADERSHIP_ERRORS.has(outcome.errorCode),
        message:
          outcome.errorCode === KafkaErrorCode.OFFSET_OUT_OF_RANGE
            ? `offset is outside ${topic}-${partition} (log start ${String(details['logStartOffset'])}, high watermark ${String(details['highWatermark'])}); seek to 'earliest' or 'latest'`
            : `${topic}-${partition}: the broker answered ${name}`,
        details: { topic, partition, ...details },
      });
    }
  }
}

/** Start positions of the whole batches in fetched bytes; a cut-off last batch is skipped. */
export function wholeBatches(bytes: Buffer): number[] {
  const positions: number[] = [];
  let position = 0;
  while (position + RECORD_BATCH_OVERHEAD <= bytes.length) {
    const size = bytes.readInt32BE(position + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
    if (size < RECORD_BATCH_OVERHEAD || position + size > bytes.length) break;
    positions.push(position);
    position += size;
  }
  return positions;
}

function protocolError(topic: string, partition: number, message: string): TributaryError {
  return new TributaryError({ code: 'PROTOCOL_ERROR', message: `${topic}-${partition}: ${message}` });
}
