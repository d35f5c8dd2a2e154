/**
 * The classic group-membership APIs, translated between their wire versions and the group
 * coordinator (broker/group/group-coordinator.ts): JoinGroup 0–5, SyncGroup 0–3, Heartbeat 0–3,
 * LeaveGroup 0–3, DescribeGroups 0–4, ListGroups 0–2, DeleteGroups 0–1.
 *
 * These handlers never call `admitted()`: a connection's group requests are answered one at a
 * time, in order (a parked JoinGroup holds its connection until the rebalance answers it, as in
 * Kafka; the Java client gives the coordinator a connection of its own).
 *
 * Authorization, as in Kafka: joining, syncing, heartbeats and leaving need READ on the group,
 * describing DESCRIBE, deleting DELETE (else GROUP_AUTHORIZATION_FAILED, the group untouched);
 * ListGroups lists the groups the principal may DESCRIBE (all of them with DESCRIBE on the cluster).
 */
import type { GroupCoordinator } from '../group/group-coordinator.js';
import { DeleteGroupsApi, type DeleteGroupsRequest, type DeleteGroupsResponse } from '../../protocol/apis/delete-groups.js';
import { DescribeGroupsApi, type DescribeGroupsRequest, type DescribeGroupsResponse } from '../../protocol/apis/describe-groups.js';
import { HeartbeatApi, type HeartbeatRequest, type HeartbeatResponse } from '../../protocol/apis/heartbeat.js';
import { JoinGroupApi, type JoinGroupRequest, type JoinGroupResponse } from '../../protocol/apis/join-group.js';
import { LeaveGroupApi, type LeaveGroupRequest, type LeaveGroupResponse } from '../../protocol/apis/leave-group.js';
import { ListGroupsApi, type ListGroupsRequest, type ListGroupsResponse } from '../../protocol/apis/list-groups.js';
import { SyncGroupApi, type SyncGroupRequest, type SyncGroupResponse } from '../../protocol/apis/sync-group.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import type { ApiHandler, RequestContext } from '../router.js';
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType } from '../security/acl.js';
import type { Authorizer } from '../security/authorizer.js';

/** Whether the requester may do `operation` on `groupId`. */
function mayGroup(authorizer: Authorizer, context: RequestContext, operation: AclOperation, groupId: string): boolean {
  return authorizer.authorize(context.identity, operation, ResourceType.GROUP, groupId);
}

const REFUSED = KafkaErrorCode.GROUP_AUTHORIZATION_FAILED;

/** JoinGroup v0 has no rebalance timeout: the session timeout bounds the rebalance (as in Kafka). */
const FIRST_VERSION_WITH_REBALANCE_TIMEOUT = 1;
/** KIP-394: from v4 a new member without an instance id first gets MEMBER_ID_REQUIRED. */
const FIRST_VERSION_REQUIRING_MEMBER_ID = 4;
/** DescribeGroups v3+: the operations a group has, of which the authorized ones are reported when asked. */
const GROUP_OPERATIONS = [AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE] as const;
const OPERATIONS_NOT_REQUESTED = -2147483648;

/** Kafka's client host: `/` and the address, without the port. */
export function clientHost(context: RequestContext): string {
  const address = context.remoteAddress.replace(/:[^:]*$/, '');
  return `/${address}`;
}

export function joinGroupHandler(coordinator: GroupCoordinator, authorizer: Authorizer): ApiHandler<JoinGroupRequest, JoinGroupResponse> {
  return {
    api: JoinGroupApi,
    async handle(request, version, context) {
      if (!mayGroup(authorizer, context, AclOperation.READ, request.groupId)) {
        return { throttleTimeMs: 0, errorCode: REFUSED, generationId: -1, protocolName: '', leader: '', memberId: request.memberId, members: [] };
      }
      const outcome = await coordinator.join({
        groupId: request.groupId,
        memberId: request.memberId,
        groupInstanceId: request.groupInstanceId,
        requireKnownMemberId: version >= FIRST_VERSION_REQUIRING_MEMBER_ID,
        clientId: context.header.clientId ?? '',
        clientHost: clientHost(context),
        rebalanceTimeoutMs: version >= FIRST_VERSION_WITH_REBALANCE_TIMEOUT ? request.rebalanceTimeoutMs : request.sessionTimeoutMs,
        sessionTimeoutMs: request.sessionTimeoutMs,
        protocolType: request.protocolType,
        // Decoded bytes are views of the request frame: the group keeps its own copies.
        protocols: request.protocols.map((protocol) => ({ name: protocol.name, metadata: Buffer.from(protocol.metadata) })),
      });
      return { throttleTimeMs: 0, ...outcome };
    },
  };
}

export function syncGroupHandler(coordinator: GroupCoordinator, authorizer: Authorizer): ApiHandler<SyncGroupRequest, SyncGroupResponse> {
  return {
    api: SyncGroupApi,
    async handle(request, _version, context) {
      if (!mayGroup(authorizer, context, AclOperation.READ, request.groupId)) return { throttleTimeMs: 0, errorCode: REFUSED, assignment: Buffer.alloc(0) };
      const outcome = await coordinator.sync({
        ...request,
        assignments: request.assignments.map((entry) => ({ memberId: entry.memberId, assignment: Buffer.from(entry.assignment) })),
      });
      return { throttleTimeMs: 0, ...outcome };
    },
  };
}

export function heartbeatHandler(coordinator: GroupCoordinator, authorizer: Authorizer): ApiHandler<HeartbeatRequest, HeartbeatResponse> {
  return {
    api: HeartbeatApi,
    async handle(request, _version, context) {
      if (!mayGroup(authorizer, context, AclOperation.READ, request.groupId)) return { throttleTimeMs: 0, errorCode: REFUSED };
      return { throttleTimeMs: 0, errorCode: await coordinator.heartbeat(request) };
    },
  };
}

export function leaveGroupHandler(coordinator: GroupCoordinator, authorizer: Authorizer): ApiHandler<LeaveGroupRequest, LeaveGroupResponse> {
  return {
    api: LeaveGroupApi,
    async handle(request, version, context) {
      if (!mayGroup(authorizer, context, AclOperation.READ, request.groupId)) return { throttleTimeMs: 0, errorCode: REFUSED, members: [] };
      // v0–2 name one member; v3+ a list, with a result each.
      const single = version < 3;
      const leaving = single ? [{ memberId: request.memberId, groupInstanceId: null }] : request.members;
      const outcome = await coordinator.leave(request.groupId, leaving);
      const errorCode = single && outcome.errorCode === KafkaErrorCode.NONE ? (outcome.members[0]?.errorCode ?? KafkaErrorCode.NONE) : outcome.errorCode;
      return { throttleTimeMs: 0, errorCode, members: single ? [] : outcome.members };
    },
  };
}

export function describeGroupsHandler(coordinator: GroupCoordinator, authorizer: Authorizer): ApiHandler<DescribeGroupsRequest, DescribeGroupsResponse> {
  return {
    api: DescribeGroupsApi,
    async handle(request, _version, context) {
      const groups = [];
      for (const groupId of request.groups) {
        if (!mayGroup(authorizer, context, AclOperation.DESCRIBE, groupId)) {
          groups.push({ errorCode: REFUSED, groupId, groupState: '', protocolType: '', protocolData: '', members: [], authorizedOperations: OPERATIONS_NOT_REQUESTED });
          continue;
        }
        const description = await coordinator.describe(groupId);
        groups.push({
          errorCode: description.errorCode,
          groupId,
          groupState: description.state,
          protocolType: description.protocolType,
          protocolData: description.protocol,
          members: description.members.map((member) => ({
            memberId: member.memberId,
            groupInstanceId: member.groupInstanceId,
            clientId: member.clientId,
            clientHost: member.clientHost,
            memberMetadata: member.metadata,
            memberAssignment: member.assignment,
          })),
          authorizedOperations: request.includeAuthorizedOperations
            ? GROUP_OPERATIONS.reduce((bits, operation) => (mayGroup(authorizer, context, operation, groupId) ? bits | (1 << operation) : bits), 0)
            : OPERATIONS_NOT_REQUESTED,
        });
      }
      return { throttleTimeMs: 0, groups };
    },
  };
}

export function listGroupsHandler(coordinator: GroupCoordinator, authorizer: Authorizer): ApiHandler<ListGroupsRequest, ListGroupsResponse> {
  return {
    api: ListGroupsApi,
    async handle(_request, _version, context) {
      try {
        const all = authorizer.authorize(context.identity, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME);
        const groups = (await coordinator.list()).filter(({ groupId }) => all || mayGroup(authorizer, context, AclOperation.DESCRIBE, groupId));
        return { throttleTimeMs: 0, errorCode: KafkaErrorCode.NONE, groups: groups.map(({ groupId, protocolType }) => ({ groupId, protocolType })) };
      } catch {
        return { throttleTimeMs: 0, errorCode: KafkaErrorCode.COORDINATOR_NOT_AVAILABLE, groups: [] };
      }
    },
  };
}

export function deleteGroupsHandler(coordinator: GroupCoordinator, authorizer: Authorizer): ApiHandler<DeleteGroupsRequest, DeleteGroupsResponse> {
  return {
    api: DeleteGroupsApi,
    async handle(request, _version, context) {
      const results = [];
      for (const groupId of request.groupsNames) {
        results.push({ groupId, errorCode: mayGroup(authorizer, context, AclOperation.DELETE, groupId) ? await coordinator.deleteGroup(groupId) : REFUSED });
      }
      return { throttleTimeMs: 0, results };
    },
  };
}
