/**
 * Raw group-protocol requests for the group integration tests, each on a Conversation of its own
 * (a parked JoinGroup holds its connection): which broker coordinates a group, how the
 * coordinator describes it (state, members, each member's assigned partitions), and committed
 * offsets through OffsetCommit/OffsetFetch exactly as a client sends them.
 */
import { FindCoordinatorApi, type FindCoordinatorResponse } from '../../src/protocol/apis/find-coordinator.js';
import { DescribeGroupsApi } from '../../src/protocol/apis/describe-groups.js';
import { OffsetCommitApi, type OffsetCommitRequest } from '../../src/protocol/apis/offset-commit.js';
import { OffsetFetchApi, type OffsetFetchResponse } from '../../src/protocol/apis/offset-fetch.js';
import { decodeConsumerAssignment } from '../../src/protocol/consumer-protocol.js';
import { Conversation } from './conversation.js';

export function portOf(bootstrap: string): { host: string; port: number } {
  const separator = bootstrap.lastIndexOf(':');
  return { host: bootstrap.slice(0, separator), port: Number(bootstrap.slice(separator + 1)) };
}

/** Opens a conversation with `bootstrap`, runs `body`, closes it. */
export async function withConversation<T>(bootstrap: string, body: (conversation: Conversation) => Promise<T>): Promise<T> {
  const { host, port } = portOf(bootstrap);
  const conversation = await Conversation.open(port, host);
  try {
    return await body(conversation);
  } finally {
    conversation.close();
  }
}

/** FindCoordinator v2 for a consumer group, asked of `bootstrap`. */
export function findCoordinator(bootstrap: string, group: string): Promise<FindCoordinatorResponse> {
  return withConversation(bootstrap, (conversation) => conversation.request(FindCoordinatorApi, 2, { key: group, keyType: 0 }));
}

export interface DescribedGroup {
  readonly errorCode: number;
  readonly state: string;
  readonly protocol: string;
  readonly members: readonly { readonly memberId: string; readonly clientId: string; readonly partitions: readonly string[] }[];
}

/** DescribeGroups v4 at `bootstrap`, each member's assignment decoded to `topic/partition` names. */
export async function describeGroup(bootstrap: string, group: string): Promise<DescribedGroup> {
  const response = await withConversation(bootstrap, (conversation) => conversation.request(DescribeGroupsApi, 4, { groups: [group], includeAuthorizedOperations: false }));
  const described = response.groups[0];
  if (described === undefined) throw new Error(`DescribeGroups answered no group for ${group}`);
  return {
    errorCode: described.errorCode,
    state: described.groupState,
    protocol: described.protocolData,
    members: described.members.map((member) => ({
      memberId: member.memberId,
      clientId: member.clientId,
      partitions:
        member.memberAssignment.length === 0
          ? []
          : decodeConsumerAssignment(member.memberAssignment).assignedPartitions.flatMap(({ topic, partitions }) => partitions.map((partition) => `${topic}/${partition}`)),
    })),
  };
}

/** A simple commit (generation −1, no member) of OffsetCommit v7: what an admin tool or kcat sends. */
export function simpleCommit(group: string, topic: string, partitions: readonly { partition: number; offset: bigint; leaderEpoch: number; metadata: string | null }[]): OffsetCommitRequest {
  return {
    groupId: group,
    generationIdOrMemberEpoch: -1,
    memberId: '',
    groupInstanceId: null,
    retentionTimeMs: -1n,
    topics: [
      {
        name: topic,
        partitions: partitions.map(({ partition, offset, leaderEpoch, metadata }) => ({
          partitionIndex: partition,
          committedOffset: offset,
          committedLeaderEpoch: leaderEpoch,
          committedMetadata: metadata,
        })),
      },
    ],
  };
}

/** OffsetCommit v7 at `bootstrap`; the error code of each partition, in request order. */
export async function commitOffsets(bootstrap: string, request: OffsetCommitRequest): Promise<number[]> {
  const response = await withConversation(bootstrap, (conversation) => conversation.request(OffsetCommitApi, 7, request));
  return response.topics.flatMap((topic) => topic.partitions.map((partition) => partition.errorCode));
}

/** OffsetFetch v5 at `bootstrap` (null topics: every committed offset of the group). */
export function fetchOffsets(bootstrap: string, group: string, topics: readonly { name: string; partitionIndexes: readonly number[] }[] | null): Promise<OffsetFetchResponse> {
  return withConversation(bootstrap, (conversation) => conversation.request(OffsetFetchApi, 5, { groupId: group, topics }));
}
