/**
 * DeleteRecords (compaction-transactions.md §2; Kafka's KafkaApis.handleDeleteRecordsRequest,
 * ReplicaManager.deleteRecords, Partition.deleteRecordsOnLeader, DelayedDeleteRecords): moves the
 * log start of partitions this broker leads, so records below it are no longer served.
 *
 * Per partition, in Kafka's order: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED; a
 * partition not in the metadata, UNKNOWN_TOPIC_OR_PARTITION; not led here, NOT_LEADER_OR_FOLLOWER
 * (or KAFKA_STORAGE_ERROR for an offline log); a topic whose cleanup.policy does not include
 * `delete` (`compact` alone), POLICY_VIOLATION; Offset −1 means the high watermark; another
 * negative one, or one past the high watermark, OFFSET_OUT_OF_RANGE. Otherwise the log start
 * becomes max(its start, Offset) — at or below the start nothing moves, and the answer is still
 * success. Tributary has no internal topics (group offsets live in the coordination store), so
 * Kafka's INVALID_TOPIC_EXCEPTION for them never applies.
 *
 * The answer waits until the low watermark — the lowest log start over the leader and every live
 * follower (replica-manager.ts) — reaches the new start: then the records are gone from every
 * replica that could lead next. Followers learn the leader's start from their Fetch responses and
 * report theirs in their next Fetch, so this takes about one replica fetch wait. A partition whose
 * low watermark is not there by TimeoutMs answers REQUEST_TIMED_OUT: the move is not undone and
 * completes as followers catch up ("maybe done", as in Kafka). A leader that steps down meanwhile
 * answers NOT_LEADER_OR_FOLLOWER, a partition deleted meanwhile UNKNOWN_TOPIC_OR_PARTITION.
 * LowWatermark is −1 on every error but the timeout, which carries the low watermark reached.
 */
import { KafkaErrorCode, KafkaProtocolError } from '../../protocol/kafka-errors.js';
import {
  DELETE_TO_HIGH_WATERMARK,
  DeleteRecordsApi,
  type DeleteRecordsRequest,
  type DeleteRecordsResponse,
  type DeleteRecordsResponsePartition,
} from '../../protocol/apis/delete-records.js';
import { deletesByRetention } from '../../storage/log-config.js';
import type { BrokerContext } from '../context.js';
import { localPartition } from '../context.js';
import type { PartitionReplica } from '../replication/partition-replica.js';
import type { ApiHandler } from '../router.js';
import { AclOperation, ResourceType } from '../security/acl.js';

/** How often a waiting request looks at the low watermark again without being woken (a follower may have died). */
const LOW_WATERMARK_RECHECK_MS = 250;

/** A partition whose start moved (or was already there) and whose answer waits for the low watermark. */
interface Pending {
  readonly topic: string;
  readonly partitionIndex: number;
  readonly replica: PartitionReplica;
  /** The leader's log start after the move: the low watermark must reach it. */
  readonly target: number;
}

export function deleteRecordsHandler(context: BrokerContext): ApiHandler<DeleteRecordsRequest, DeleteRecordsResponse> {
  /** Connections with requests waiting: a closed one stops its waits (TimeoutMs may be days). */
  const waiting = new Map<number, { closed: boolean }>();
  return {
    api: DeleteRecordsApi,
    onConnectionClosed(connectionId) {
      const connection = waiting.get(connectionId);
      if (connection !== undefined) connection.closed = true;
      waiting.delete(connectionId);
    },
    async handle(request, _version, requestContext) {
      const deadline = Date.now() + Math.max(0, request.timeoutMs);
      const decided = new Map<string, boolean>();
      const allowed = (topic: string): boolean => {
        let verdict = decided.get(topic);
        if (verdict === undefined) {
          verdict = context.authorizer.authorize(requestContext.identity, AclOperation.DELETE, ResourceType.TOPIC, topic);
          decided.set(topic, verdict);
        }
        return verdict;
      };
      const topics = request.topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map((wanted): DeleteRecordsResponsePartition | Pending => {
          if (!allowed(topic.name)) return failed(wanted.partitionIndex, KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED);
          return deleteOnLeader(context, topic.name, wanted.partitionIndex, wanted.offset);
        }),
      }));
      // Every partition waits within the one deadline, as Kafka's single delayed operation does.
      const connection = waiting.get(requestContext.connectionId) ?? { closed: false };
      waiting.set(requestContext.connectionId, connection);
      const answered = await Promise.all(
        topics.map(async (topic) => ({
          name: topic.name,
          partitions: await Promise.all(topic.partitions.map((outcome) => ('replica' in outcome ? waitForLowWatermark(context, outcome, deadline, connection) : Promise.resolve(outcome)))),
        })),
      );
      return { throttleTimeMs: 0, topics: answered };
    },
  };
}

function failed(partitionIndex: number, errorCode: number): DeleteRecordsResponsePartition {
  return { partitionIndex, lowWatermark: -1n, errorCode };
}

/** The checks and the move on the leader (Partition.deleteRecordsOnLeader); a pending wait on success. */
function deleteOnLeader(context: BrokerContext, topic: string, partitionIndex: number, requested: bigint): DeleteRecordsResponsePartition | Pending {
  const local = localPartition(context, topic, partitionIndex);
  if (local.log === undefined) return failed(partitionIndex, local.errorCode);
  const { log, replica } = local;
  // Kafka's `config.delete`: `delete` or `compact,delete`; a compact-only log keeps its history.
  if (!deletesByRetention(log.config)) return failed(partitionIndex, KafkaErrorCode.POLICY_VIOLATION);
  const offset = requested === DELETE_TO_HIGH_WATERMARK ? log.highWatermark : requested;
  if (offset < 0n || offset > BigInt(log.highWatermark)) return failed(partitionIndex, KafkaErrorCode.OFFSET_OUT_OF_RANGE);
  try {
    if (log.incrementLogStartOffset(Number(offset))) {
      context.logger.info({ topic, partition: partitionIndex, logStartOffset: log.logStartOffset, requested: String(requested) }, 'deleted records (DeleteRecords)');
    }
  } catch (error) {
    if (error instanceof KafkaProtocolError) return failed(partitionIndex, error.kafkaCode);
    context.logger.error({ err: error, topic, partition: partitionIndex }, 'DeleteRecords failed');
    return failed(partitionIndex, KafkaErrorCode.UNKNOWN_SERVER_ERROR);
  }
  return { topic, partitionIndex, replica, target: log.logStartOffset };
}

/** Answers once the low watermark reaches the target, the leader is gone, or the deadline passes (DelayedDeleteRecords). */
async function waitForLowWatermark(context: BrokerContext, pending: Pending, deadline: number, connection: { readonly closed: boolean }): Promise<DeleteRecordsResponsePartition> {
  const { replica, partitionIndex, target } = pending;
  for (;;) {
    // The same replica must still lead here: a new epoch or a deleted topic ends the wait.
    const now = localPartition(context, pending.topic, partitionIndex);
    if (now.replica !== replica) return failed(partitionIndex, now.replica === undefined ? now.errorCode : KafkaErrorCode.NOT_LEADER_OR_FOLLOWER);
    const lowWatermark = context.replicas.lowWatermark(replica);
    if (lowWatermark >= target) return { partitionIndex, lowWatermark: BigInt(lowWatermark), errorCode: KafkaErrorCode.NONE };
    const left = deadline - Date.now();
    // No one will read the answer of a closed connection: stop looking (the move stands).
    if (left <= 0 || connection.closed) return { partitionIndex, lowWatermark: BigInt(lowWatermark), errorCode: KafkaErrorCode.REQUEST_TIMED_OUT };
    await replica.lowWatermarkMayMove(Math.min(left, LOW_WATERMARK_RECHECK_MS));
  }
}
