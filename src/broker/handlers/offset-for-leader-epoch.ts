/**
 * OffsetForLeaderEpoch (KIP-101, KIP-279, KIP-320): where a leader epoch ends in this leader's
 * log — the largest epoch at or below the one asked for, and the start of the next epoch (or the
 * log end for the latest). Followers truncate by it when they start following; the Java consumer
 * validates its position with it after a leader change. Only the leader answers, after checking
 * CurrentLeaderEpoch (v2+).
 *
 * Needs CLUSTER_ACTION on the cluster (followers) or DESCRIBE on the topic (consumers, KIP-320),
 * as in Kafka; a refused topic's partitions answer TOPIC_AUTHORIZATION_FAILED.
 */
import { OffsetForLeaderEpochApi, type OffsetForLeaderEpochRequest, type OffsetForLeaderEpochResponse } from '../../protocol/apis/offset-for-leader-epoch.js';
import type { BrokerContext } from '../context.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import type { ApiHandler } from '../router.js';
import { mayDescribeTopic } from '../security/topic-access.js';

export function offsetForLeaderEpochHandler(context: BrokerContext): ApiHandler<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse> {
  return {
    api: OffsetForLeaderEpochApi,
    handle(request, _version, requestContext) {
      const allowed = mayDescribeTopic(context.authorizer, requestContext.identity, true);
      const topics = request.topics.map((topic) => ({
        topic: topic.topic,
        partitions: topic.partitions.map((wanted) => {
          if (!allowed(topic.topic)) return { errorCode: KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED, partition: wanted.partition, leaderEpoch: -1, endOffset: -1n };
          const lookup = context.replicas.leaderFor(topic.topic, wanted.partition, wanted.currentLeaderEpoch);
          if (lookup.replica === undefined) return { errorCode: lookup.errorCode, partition: wanted.partition, leaderEpoch: -1, endOffset: -1n };
          const { epoch, endOffset } = context.replicas.endOffsetForEpoch(lookup.replica, wanted.leaderEpoch);
          return { errorCode: 0, partition: wanted.partition, leaderEpoch: epoch, endOffset: BigInt(endOffset) };
        }),
      }));
      return Promise.resolve({ throttleTimeMs: 0, topics });
    },
  };
}
