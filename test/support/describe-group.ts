/**
 * DescribeGroups v4 straight to a broker (the coordinator of every group on a standalone broker),
 * with each member's stored assignment decoded as the consumer protocol's Assignment
 * (src/protocol/consumer-protocol.ts). v4 carries group.instance.id, which kafkajs' admin (v0–2)
 * does not show.
 */
import { DescribeGroupsApi } from '../../src/protocol/apis/describe-groups.js';
import { decodeConsumerAssignment } from '../../src/protocol/consumer-protocol.js';
import { Conversation } from './conversation.js';

export interface DescribedMember {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly clientId: string;
  readonly clientHost: string;
  /** Partitions of `topic` in the member's assignment, sorted; [] when the group is not Stable. */
  readonly partitions: number[];
}

export interface DescribedGroup {
  readonly errorCode: number;
  readonly state: string;
  readonly protocolType: string;
  readonly protocol: string;
  readonly members: DescribedMember[];
}

export async function describeGroup(port: number, group: string, topic: string): Promise<DescribedGroup> {
  const conversation = await Conversation.open(port);
  try {
    const response = await conversation.request(DescribeGroupsApi, 4, { groups: [group], includeAuthorizedOperations: false });
    const found = response.groups[0];
    if (found === undefined) throw new Error(`DescribeGroups returned no ${group}`);
    return {
      errorCode: found.errorCode,
      state: found.groupState,
      protocolType: found.protocolType,
      protocol: found.protocolData,
      members: found.members.map((member) => ({
        memberId: member.memberId,
        groupInstanceId: member.groupInstanceId,
        clientId: member.clientId,
        clientHost: member.clientHost,
        partitions:
          member.memberAssignment.length === 0
            ? []
            : decodeConsumerAssignment(member.memberAssignment)
                .assignedPartitions.filter((entry) => entry.topic === topic)
                .flatMap((entry) => [...entry.partitions])
                .sort((a, b) => a - b),
      })),
    };
  } finally {
    conversation.close();
  }
}

/** Partition → member id; throws if a partition is assigned to two members. */
export function ownersOf(group: DescribedGroup): Map<number, string> {
  const owners = new Map<number, string>();
  for (const member of group.members) {
    for (const partition of member.partitions) {
      const other = owners.get(partition);
      if (other !== undefined) throw new Error(`partition ${partition} is assigned to both ${other} and ${member.memberId}`);
      owners.set(partition, member.memberId);
    }
  }
  return owners;
}
