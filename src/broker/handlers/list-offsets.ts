/**
 * ListOffsets: −1 → the high watermark (the next offset a consumer can read), −2 → the log start,
 * T ≥ 0 → the first record with timestamp ≥ T (offset −1 and timestamp −1 when there is none).
 * Only the leader answers, after checking the client's CurrentLeaderEpoch (v4+, KIP-320); each
 * answer names the leader epoch of its offset, which the Java consumer later validates its
 * position with (OffsetForLeaderEpoch).
 *
 * Needs DESCRIBE on the topic (a follower: CLUSTER_ACTION on the cluster will do); a refused
 * topic's partitions answer TOPIC_AUTHORIZATION_FAILED.
 */
import { KafkaErrorCode, KafkaProtocolError } from '../../protocol/kafka-errors.js';
import {
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  ListOffsetsApi,
  type ListOffsetsRequest,
  type ListOffsetsResponse,
  type ListOffsetsResponsePartition,
} from '../../protocol/apis/list-offsets.js';
import type { EpochEntry } from '../../storage/leader-epoch-cache.js';
import type { BrokerContext } from '../context.js';
import { localPartition } from '../context.js';
import type { ApiHandler } from '../router.js';
import { mayDescribeTopic } from '../security/topic-access.js';

export function listOffsetsHandler(context: BrokerContext): ApiHandler<ListOffsetsRequest, ListOffsetsResponse> {
  return {
    api: ListOffsetsApi,
    async handle(request, _version, requestContext) {
      const allowed = mayDescribeTopic(context.authorizer, requestContext.identity, request.replicaId >= 0);
      const topics = [];
      for (const topic of request.topics) {
        const partitions: ListOffsetsResponsePartition[] = [];
        const refused = !allowed(topic.name);
        for (const wanted of topic.partitions) {
          partitions.push(
            refused
              ? { partitionIndex: wanted.partitionIndex, errorCode: KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED, timestamp: -1n, offset: -1n, leaderEpoch: -1 }
              : await lookup(context, topic.name, wanted.partitionIndex, wanted.timestamp, wanted.currentLeaderEpoch),
          );
        }
        topics.push({ name: topic.name, partitions });
      }
      return { throttleTimeMs: 0, topics };
    },
  };
}

async function lookup(context: BrokerContext, topic: string, partition: number, timestamp: bigint, currentLeaderEpoch: number): Promise<ListOffsetsResponsePartition> {
  const answer = (errorCode: number, offset: bigint, at: bigint, leaderEpoch = -1): ListOffsetsResponsePartition => ({ partitionIndex: partition, errorCode, timestamp: at, offset, leaderEpoch });
  const local = localPartition(context, topic, partition, currentLeaderEpoch);
  if (local.log === undefined) return answer(local.errorCode, -1n, -1n);
  const log = local.log;
  const epochAt = (offset: number): number => epochOfOffset(log.leaderEpochCache.entries(), offset);
  if (timestamp === LATEST_TIMESTAMP) return answer(0, BigInt(log.highWatermark), -1n, local.replica.leaderEpoch);
  if (timestamp === EARLIEST_TIMESTAMP) return answer(0, BigInt(log.logStartOffset), -1n, epochAt(log.logStartOffset));
  if (timestamp < 0n) return answer(KafkaErrorCode.INVALID_REQUEST, -1n, -1n);
  try {
    // The timestamp stays exact: any int64 ≥ 0 may be asked for and stored.
    const found = await log.offsetForTimestamp(timestamp);
    return found === undefined ? answer(0, -1n, -1n) : answer(0, BigInt(found.offset), found.timestamp, epochAt(found.offset));
  } catch (error) {
    if (error instanceof KafkaProtocolError) return answer(error.kafkaCode, -1n, -1n);
    throw error;
  }
}

/** The leader epoch in which `offset` was written: the last epoch that started at or before it (−1: none known). */
export function epochOfOffset(entries: readonly EpochEntry[], offset: number): number {
  let epoch = -1;
  for (const entry of entries) {
    if (entry.startOffset > offset) break;
    epoch = entry.epoch;
  }
  return epoch;
}
