/**
 * OffsetCommit 2–7 and OffsetFetch 1–5: a group's committed offsets, kept by the group
 * coordinator in the paper's offset registry (durable before the answer).
 *
 * - OffsetCommit v2–4 carry a retention time of the commit's own (-1: the broker's);
 *   v6+ the leader epoch, kept and returned exactly as committed; v7 the group instance id.
 * - OffsetFetch v1 has per-partition errors only, so a coordinator-level error is written into
 *   each partition; v2+ have a top-level error and a null topic list meaning "every partition".
 */
import type { GroupCoordinator } from '../group/group-coordinator.js';
import { OffsetCommitApi, type OffsetCommitRequest, type OffsetCommitResponse } from '../../protocol/apis/offset-commit.js';
import { OffsetFetchApi, type OffsetFetchRequest, type OffsetFetchResponse, type OffsetFetchResponseTopic } from '../../protocol/apis/offset-fetch.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import type { ApiHandler } from '../router.js';

const LAST_VERSION_WITH_RETENTION = 4;
const FIRST_VERSION_WITH_TOP_LEVEL_ERROR = 2;

export function offsetCommitHandler(coordinator: GroupCoordinator): ApiHandler<OffsetCommitRequest, OffsetCommitResponse> {
  return {
    api: OffsetCommitApi,
    async handle(request, version) {
      const offsets = request.topics.flatMap((topic) =>
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
      let index = 0;
      return {
        throttleTimeMs: 0,
        topics: request.topics.map((topic) => ({
          name: topic.name,
          partitions: topic.partitions.map((partition) => ({ partitionIndex: partition.partitionIndex, errorCode: errors[index++] ?? KafkaErrorCode.UNKNOWN_SERVER_ERROR })),
        })),
      };
    },
  };
}

export function offsetFetchHandler(coordinator: GroupCoordinator): ApiHandler<OffsetFetchRequest, OffsetFetchResponse> {
  return {
    api: OffsetFetchApi,
    async handle(request, version) {
      const wanted = request.topics === null ? null : request.topics.map((topic) => ({ topic: topic.name, partitions: topic.partitionIndexes }));
      const result = await coordinator.fetchOffsets(request.groupId, wanted);
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
        const partitions = byTopic.get(offset.topic) ?? [];
        partitions.push({ partitionIndex: offset.partition, committedOffset: offset.offset, committedLeaderEpoch: offset.leaderEpoch, metadata: offset.metadata, errorCode: offset.errorCode });
        byTopic.set(offset.topic, partitions);
      }
      return { throttleTimeMs: 0, topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })), errorCode: KafkaErrorCode.NONE };
    },
  };
}
