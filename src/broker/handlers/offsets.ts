/**
 * OffsetCommit 2–7 and OffsetFetch 1–5: a group's committed offsets, kept by the group
 * coordinator in the paper's offset registry (durable before the answer).
 *
 * - OffsetCommit v2–4 carry a retention time of the commit's own (-1: the broker's);
 *   v6+ the leader epoch, kept and returned exactly as committed; v7 the group instance id.
 *   A commit needs READ on the group (else every partition is GROUP_AUTHORIZATION_FAILED) and
 *   READ on each topic (else its partitions are TOPIC_AUTHORIZATION_FAILED, not committed).
 * - OffsetFetch v1 has per-partition errors only, so a coordinator-level error is written into
 *   each partition; v2+ have a top-level error and a null topic list meaning "every partition".
 *   A fetch needs DESCRIBE on the group; topics the principal may not DESCRIBE are left out of
 *   "every partition", and answered TOPIC_AUTHORIZATION_FAILED when named.
 */
import type { GroupCoordinator } from '../group/group-coordinator.js';
import { OffsetCommitApi, type OffsetCommitRequest, type OffsetCommitResponse } from '../../protocol/apis/offset-commit.js';
import { OffsetFetchApi, type OffsetFetchRequest, type OffsetFetchResponse, type OffsetFetchResponseTopic } from '../../protocol/apis/offset-fetch.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import type { ApiHandler, RequestContext } from '../router.js';
import { AclOperation, ResourceType } from '../security/acl.js';
import type { Authorizer } from '../security/authorizer.js';

/** Whether the requester may do `operation` on the resource. */
function may(authorizer: Authorizer, context: RequestContext, operation: AclOperation, resourceType: ResourceType, name: string): boolean {
  return authorizer.authorize(context.identity, operation, resourceType, name);
}

const LAST_VERSION_WITH_RETENTION = 4;
const FIRST_VERSION_WITH_TOP_LEVEL_ERROR = 2;

export function offsetCommitHandler(coordinator: GroupCoordinator, authorizer: Authorizer): ApiHandler<OffsetCommitRequest, OffsetCommitResponse> {
  return {
    api: OffsetCommitApi,
    async handle(request, version, context) {
      const answerAll = (errorOf: (topic: string) => number | undefined, committed: readonly number[] = []): OffsetCommitResponse => {
        let index = 0;
        return {
          throttleTimeMs: 0,
          topics: request.topics.map((topic) => ({
            name: topic.name,
            partitions: topic.partitions.map((partition) => ({ partitionIndex: partition.partitionIndex, errorCode: errorOf(topic.name) ?? committed[index++] ?? KafkaErrorCode.UNKNOWN_SERVER_ERROR })),
          })),
        };
      };
      if (!may(authorizer, context, AclOperation.READ, ResourceType.GROUP, request.groupId)) return answerAll(() => KafkaErrorCode.GROUP_AUTHORIZATION_FAILED);
      const refused = new Set(request.topics.filter((topic) => !may(authorizer, context, AclOperation.READ, ResourceType.TOPIC, topic.name)).map((topic) => topic.name));
      const offsets = request.topics.filter((topic) => !refused.has(topic.name)).flatMap((topic) =>
        topic.partitions.map((partition) => ({
          topic: topic.name,
          partition: partition.partitionIndex,
          offset: partition.committedOffset,
          leaderEpoch: partition.committedLeaderEpoch,
          metadata: partition.committedMetadata,
        })),
      );
      const retention = version <= LAST_VERSION_WITH_RETENTION ? Number(request.retentionTimeMs) : -1;
      const errors = await coordinator.commitOffsets({
        groupId: request.groupId,
        generationId: request.generationIdOrMemberEpoch,
        memberId: request.memberId,
        groupInstanceId: request.groupInstanceId,
        retentionTimeMs: Number.isSafeInteger(retention) ? retention : -1,
        offsets,
      });
      return answerAll((topic) => (refused.has(topic) ? KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED : undefined), errors);
    },
  };
}

export function offsetFetchHandler(coordinator: GroupCoordinator, authorizer: Authorizer): ApiHandler<OffsetFetchRequest, OffsetFetchResponse> {
  return {
    api: OffsetFetchApi,
    async handle(request, version, context) {
      const mayDescribe = (topic: string): boolean => may(authorizer, context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic);
      const groupAllowed = may(authorizer, context, AclOperation.DESCRIBE, ResourceType.GROUP, request.groupId);
      const refusedTopics = (request.topics ?? []).filter((topic) => !mayDescribe(topic.name));
      const wanted = request.topics === null ? null : request.topics.filter((topic) => mayDescribe(topic.name)).map((topic) => ({ topic: topic.name, partitions: topic.partitionIndexes }));
      const result = groupAllowed ? await coordinator.fetchOffsets(request.groupId, wanted) : { errorCode: KafkaErrorCode.GROUP_AUTHORIZATION_FAILED, offsets: [] };
      if (result.errorCode !== KafkaErrorCode.NONE) {
        const topics: OffsetFetchResponseTopic[] =
          version >= FIRST_VERSION_WITH_TOP_LEVEL_ERROR
            ? []
            : (request.topics ?? []).map((topic) => ({
                name: topic.name,
                partitions: topic.partitionIndexes.map((partitionIndex) => ({ partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: result.errorCode })),
              }));
        return { throttleTimeMs: 0, topics, errorCode: result.errorCode };
      }
      const byTopic = new Map<string, OffsetFetchResponseTopic['partitions'][number][]>();
      for (const offset of result.offsets) {
        if (request.topics === null && !mayDescribe(offset.topic)) continue;
        const partitions = byTopic.get(offset.topic) ?? [];
        partitions.push({ partitionIndex: offset.partition, committedOffset: offset.offset, committedLeaderEpoch: offset.leaderEpoch, metadata: offset.metadata, errorCode: offset.errorCode });
        byTopic.set(offset.topic, partitions);
      }
      for (const topic of refusedTopics) {
        byTopic.set(
          topic.name,
          topic.partitionIndexes.map((partitionIndex) => ({ partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED })),
        );
      }
      return { throttleTimeMs: 0, topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })), errorCode: KafkaErrorCode.NONE };
    },
  };
}
