/**
 * Deleting records below an offset (Kafka's Admin.deleteRecords, KIP-204): one DeleteRecords
 * request per partition leader, each partition answered on its own. Offset −1n means "everything
 * below the high watermark". A partition whose leader moved (NOT_LEADER_OR_FOLLOWER, a lost
 * connection) is asked again of the new leader after a metadata refresh, a bounded number of
 * times; REQUEST_TIMED_OUT is not retried — the leader has moved its start and its followers will
 * follow ("maybe done"), so the caller decides.
 */
import { TributaryError } from '../common/errors.js';
import { DeleteRecordsApi, type DeleteRecordsRequestTopic } from '../protocol/apis/delete-records.js';
import { KafkaErrorCode, kafkaErrorName } from '../protocol/kafka-errors.js';
import type { ClusterClient } from './cluster-client.js';

export interface RecordsToDelete {
  readonly topic: string;
  readonly partition: number;
  /** Records below this offset go; −1n = the high watermark. */
  readonly offset: bigint;
}

export type DeleteRecordsOutcome =
  /** The records are gone from every live replica; `lowWatermark` is the partition's new first offset. */
  | { readonly topic: string; readonly partition: number; readonly lowWatermark: bigint }
  | { readonly topic: string; readonly partition: number; readonly error: TributaryError };

export interface DeleteRecordsOptions {
  /** How long each broker may wait for the followers to delete too (the request's TimeoutMs); default 30 s. */
  readonly timeoutMs?: number;
  /** How many times a partition whose leader moved is asked again; default 3. */
  readonly retries?: number;
}

/** DeleteRecords v1: v0 and v1 are one layout; every client and broker that has the API speaks v1. */
const VERSION = 1;

/** Errors after which the partition is asked again of its (new) leader. */
const LEADERSHIP_ERRORS: ReadonlySet<number> = new Set([KafkaErrorCode.NOT_LEADER_OR_FOLLOWER, KafkaErrorCode.LEADER_NOT_AVAILABLE, KafkaErrorCode.KAFKA_STORAGE_ERROR]);
const CONNECTION_FAILURES: ReadonlySet<string> = new Set(['CONNECTION_LOST', 'REQUEST_TIMED_OUT', 'LEADER_NOT_AVAILABLE', 'BROKER_NOT_AVAILABLE']);

/** Deletes the records below each offset; resolves with one outcome per partition, in the order given. */
export async function deleteRecords(cluster: ClusterClient, wanted: readonly RecordsToDelete[], options: DeleteRecordsOptions = {}): Promise<DeleteRecordsOutcome[]> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retries = options.retries ?? 3;
  const outcomes = new Map<RecordsToDelete, DeleteRecordsOutcome>();
  let pending = [...wanted];
  for (let attempt = 0; pending.length > 0; attempt += 1) {
    const again: RecordsToDelete[] = [];
    const retry = (entry: RecordsToDelete, error: TributaryError): void => {
      if (attempt < retries) again.push(entry);
      else outcomes.set(entry, { topic: entry.topic, partition: entry.partition, error });
    };
    const byLeader = new Map<number, RecordsToDelete[]>();
    for (const entry of pending) {
      const leader = await leaderOf(cluster, entry);
      if (leader instanceof TributaryError) {
        // The cluster client already asked again for a topic it does not know; a leader may yet be elected.
        if (leader.retriable && leader.code !== 'UNKNOWN_TOPIC_OR_PARTITION') retry(entry, leader);
        else outcomes.set(entry, { topic: entry.topic, partition: entry.partition, error: leader });
        continue;
      }
      byLeader.set(leader, [...(byLeader.get(leader) ?? []), entry]);
    }
    await Promise.all(
      [...byLeader].map(async ([leader, entries]) => {
        let response;
        try {
          const connection = await cluster.connectionTo(leader);
          response = await connection.request(DeleteRecordsApi, VERSION, { topics: requestTopics(entries), timeoutMs });
        } catch (error) {
          const failure = error instanceof TributaryError ? error : new TributaryError({ code: 'DELETE_RECORDS_FAILED', message: `DeleteRecords to broker ${leader} failed: ${String(error)}`, cause: error });
          for (const entry of entries) {
            if (CONNECTION_FAILURES.has(failure.code)) retry(entry, failure);
            else outcomes.set(entry, { topic: entry.topic, partition: entry.partition, error: failure });
          }
          return;
        }
        for (const entry of entries) {
          const answer = response.topics.find((topic) => topic.name === entry.topic)?.partitions.find((partition) => partition.partitionIndex === entry.partition);
          if (answer === undefined) {
            outcomes.set(entry, { topic: entry.topic, partition: entry.partition, error: new TributaryError({ code: 'PROTOCOL_ERROR', message: `broker ${leader} did not answer for ${entry.topic}-${entry.partition}` }) });
          } else if (answer.errorCode === KafkaErrorCode.NONE) {
            outcomes.set(entry, { topic: entry.topic, partition: entry.partition, lowWatermark: answer.lowWatermark });
          } else if (LEADERSHIP_ERRORS.has(answer.errorCode)) {
            retry(entry, partitionError(entry, answer.errorCode, answer.lowWatermark));
          } else {
            outcomes.set(entry, { topic: entry.topic, partition: entry.partition, error: partitionError(entry, answer.errorCode, answer.lowWatermark) });
          }
        }
      }),
    );
    pending = again;
    if (pending.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 1_000)));
      await cluster.refreshMetadata([...new Set(pending.map((entry) => entry.topic))]).catch(() => undefined);
    }
  }
  return wanted.map((entry) => outcomes.get(entry) ?? { topic: entry.topic, partition: entry.partition, error: new TributaryError({ code: 'DELETE_RECORDS_FAILED', message: `no answer for ${entry.topic}-${entry.partition}` }) });
}

/** The partition's leader, or why there is none to ask (retriable when one may appear). */
async function leaderOf(cluster: ClusterClient, entry: RecordsToDelete): Promise<number | TributaryError> {
  try {
    const { partitions } = await cluster.topicMetadata(entry.topic);
    const found = partitions[entry.partition];
    if (found === undefined) {
      return new TributaryError({
        code: 'UNKNOWN_TOPIC_OR_PARTITION',
        message: `topic ${entry.topic} has ${partitions.length} partitions, so partition ${entry.partition} does not exist`,
        details: { topic: entry.topic, partition: entry.partition },
      });
    }
    if (found.leader < 0) return new TributaryError({ code: 'LEADER_NOT_AVAILABLE', retriable: true, message: `${entry.topic}-${entry.partition} has no leader now`, details: { topic: entry.topic, partition: entry.partition } });
    return found.leader;
  } catch (error) {
    if (error instanceof TributaryError) return error;
    throw error;
  }
}

function requestTopics(entries: readonly RecordsToDelete[]): DeleteRecordsRequestTopic[] {
  const byTopic = new Map<string, { partitionIndex: number; offset: bigint }[]>();
  for (const entry of entries) byTopic.set(entry.topic, [...(byTopic.get(entry.topic) ?? []), { partitionIndex: entry.partition, offset: entry.offset }]);
  return [...byTopic].map(([name, partitions]) => ({ name, partitions }));
}

function partitionError(entry: RecordsToDelete, errorCode: number, lowWatermark: bigint): TributaryError {
  const name = kafkaErrorName(errorCode);
  const where = `${entry.topic}-${entry.partition}`;
  const why: Partial<Record<number, string>> = {
    [KafkaErrorCode.OFFSET_OUT_OF_RANGE]: `offset ${entry.offset} is negative or past the partition's high watermark`,
    [KafkaErrorCode.POLICY_VIOLATION]: "the topic's cleanup.policy does not include delete",
    [KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED]: 'the principal may not DELETE on this topic',
    [KafkaErrorCode.REQUEST_TIMED_OUT]: `the leader moved the log start, but not every live replica had by the timeout (low watermark ${lowWatermark}); the deletion completes as they catch up`,
  };
  return new TributaryError({
    code: name,
    retriable: errorCode === KafkaErrorCode.REQUEST_TIMED_OUT || LEADERSHIP_ERRORS.has(errorCode),
    message: `could not delete records of ${where}: ${name}${why[errorCode] === undefined ? '' : ` — ${why[errorCode]}`}`,
    details: { topic: entry.topic, partition: entry.partition, offset: String(entry.offset), errorCode },
  });
}
