/**
 * The classic consumer-group APIs: JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup
 * (14), DescribeGroups (15), ListGroups (16) and DeleteGroups (42). Round trips per served
 * version (absent fields decode to Kafka's defaults), golden bytes laid out by hand from Kafka's
 * message definitions, and truncation.
 */
import { describe, expect, it } from 'vitest';
import {
  DeleteGroupsApi,
  DescribeGroupsApi,
  HeartbeatApi,
  JoinGroupApi,
  LeaveGroupApi,
  ListGroupsApi,
  SyncGroupApi,
  type DeleteGroupsRequest,
  type DeleteGroupsResponse,
  type DescribeGroupsRequest,
  type DescribeGroupsResponse,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type JoinGroupRequest,
  type JoinGroupResponse,
  type LeaveGroupRequest,
  type LeaveGroupResponse,
  type ListGroupsResponse,
  type SyncGroupRequest,
  type SyncGroupResponse,
} from '../../../../src/protocol/apis/index.js';
import { decodeConsumerAssignment, decodeConsumerSubscription, encodeConsumerAssignment, encodeConsumerSubscription } from '../../../../src/protocol/consumer-protocol.js';
import {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  hex,
  roundTripRequest,
  roundTripResponse,
  thrownBy,
  truncationTests,
  versionsOf,
} from './helpers.js';

const SUBSCRIPTION = encodeConsumerSubscription({ topics: ['orders'], ownedPartitions: [{ topic: 'orders', partitions: [0] }], generationId: 4 });
const ASSIGNMENT = encodeConsumerAssignment({ assignedPartitions: [{ topic: 'orders', partitions: [0, 1] }] });

// ---------------------------------------------------------------------------------------------
// JoinGroup

const JOIN_REQUEST: JoinGroupRequest = {
  groupId: 'orders-app',
  sessionTimeoutMs: 45_000,
  rebalanceTimeoutMs: 300_000,
  memberId: 'consumer-1-4f2c',
  groupInstanceId: 'instance-1',
  protocolType: 'consumer',
  protocols: [
    { name: 'range', metadata: SUBSCRIPTION },
    { name: 'cooperative-sticky', metadata: Buffer.from([0, 1, 2]) },
  ],
};

function expectedJoinRequest(v: number): JoinGroupRequest {
  return { ...JOIN_REQUEST, rebalanceTimeoutMs: v >= 1 ? 300_000 : -1, groupInstanceId: v >= 5 ? 'instance-1' : null };
}

const JOIN_RESPONSE: JoinGroupResponse = {
  throttleTimeMs: 9,
  errorCode: 0,
  generationId: 3,
  protocolName: 'range',
  leader: 'consumer-1-4f2c',
  memberId: 'consumer-1-4f2c',
  members: [
    { memberId: 'consumer-1-4f2c', groupInstanceId: 'instance-1', metadata: SUBSCRIPTION },
    { memberId: 'consumer-2-9a01', groupInstanceId: null, metadata: Buffer.alloc(0) },
  ],
};

function expectedJoinResponse(v: number): JoinGroupResponse {
  return { ...JOIN_RESPONSE, throttleTimeMs: v >= 2 ? 9 : 0, members: JOIN_RESPONSE.members.map((m) => ({ ...m, groupInstanceId: v >= 5 ? m.groupInstanceId : null })) };
}

describe('JoinGroup schema', () => {
  it('serves v0–v5 under api key 11', () => {
    expect(JoinGroupApi.apiKey).toBe(11);
    expect(versionsOf(JoinGroupApi)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  for (const v of versionsOf(JoinGroupApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(JoinGroupApi, v, JOIN_REQUEST)).toStrictEqual(expectedJoinRequest(v));
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(JoinGroupApi, v, JOIN_RESPONSE)).toStrictEqual(expectedJoinResponse(v));
    });
  }

  it('protocol metadata is passed as opaque bytes (here a consumer Subscription)', () => {
    const decoded = roundTripRequest(JoinGroupApi, 5, JOIN_REQUEST);
    expect(decodeConsumerSubscription(decoded.protocols[0]?.metadata ?? Buffer.alloc(0)).ownedPartitions).toStrictEqual([{ topic: 'orders', partitions: [0] }]);
  });
});

describe('JoinGroup golden bytes', () => {
  it('v0 request: no RebalanceTimeoutMs (−1) and no GroupInstanceId (null)', () => {
    const bytes = hex(`
      00 01 67                    # GroupId "g"
      00 00 27 10                 # SessionTimeoutMs 10000
      00 00                       # MemberId ""
      00 08 636f6e73756d6572      # ProtocolType "consumer"
      00 00 00 01                 # Protocols: 1
      00 05 72616e6765            #   Name "range"
      00 00 00 02 ab cd           #   Metadata: 2 bytes
    `);
    const request: JoinGroupRequest = {
      groupId: 'g',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: -1,
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.from([0xab, 0xcd]) }],
    };
    expect(encodeRequest(JoinGroupApi, 0, { ...request, rebalanceTimeoutMs: 5, groupInstanceId: 'x' })).toStrictEqual(bytes);
    expect(decodeRequest(JoinGroupApi, 0, bytes)).toStrictEqual(request);
  });

  it('v5 request carrying a consumer Subscription v0', () => {
    const bytes = hex(`
      00 01 67                    # GroupId "g"
      00 00 27 10                 # SessionTimeoutMs 10000
      00 04 93 e0                 # RebalanceTimeoutMs 300000
      00 01 6d                    # MemberId "m"
      00 01 69                    # GroupInstanceId "i"
      00 08 636f6e73756d6572      # ProtocolType "consumer"
      00 00 00 01                 # Protocols: 1
      00 05 72616e6765            #   Name "range"
      00 00 00 0d                 #   Metadata: 13 bytes, a Subscription:
      00 00                       #     Version 0
      00 00 00 01 | 00 01 74      #     Topics ["t"]
      ff ff ff ff                 #     UserData null
    `);
    const request: JoinGroupRequest = {
      groupId: 'g',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 300_000,
      memberId: 'm',
      groupInstanceId: 'i',
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: encodeConsumerSubscription({ version: 0, topics: ['t'] }) }],
    };
    expect(encodeRequest(JoinGroupApi, 5, request)).toStrictEqual(bytes);
    expect(decodeRequest(JoinGroupApi, 5, bytes)).toStrictEqual(request);
  });

  it('v0 and v5 responses', () => {
    const v0 = hex(`
      00 00                       # ErrorCode 0
      00 00 00 01                 # GenerationId 1
      00 05 72616e6765            # ProtocolName "range"
      00 01 6d                    # Leader "m"
      00 01 6d                    # MemberId "m"
      00 00 00 01                 # Members: 1
      00 01 6d                    #   MemberId "m"
      00 00 00 02 ab cd           #   Metadata: 2 bytes
    `);
    const v5 = hex(`
      00 00 00 00                 # ThrottleTimeMs 0
      00 00                       # ErrorCode 0
      00 00 00 01                 # GenerationId 1
      00 05 72616e6765            # ProtocolName "range"
      00 01 6d                    # Leader "m"
      00 01 6d                    # MemberId "m"
      00 00 00 01                 # Members: 1
      00 01 6d                    #   MemberId "m"
      ff ff                       #   GroupInstanceId null
      00 00 00 02 ab cd           #   Metadata: 2 bytes
    `);
    const response: JoinGroupResponse = {
      throttleTimeMs: 0,
      errorCode: 0,
      generationId: 1,
      protocolName: 'range',
      leader: 'm',
      memberId: 'm',
      members: [{ memberId: 'm', groupInstanceId: null, metadata: Buffer.from([0xab, 0xcd]) }],
    };
    expect(encodeResponse(JoinGroupApi, 0, response)).toStrictEqual(v0);
    expect(decodeResponse(JoinGroupApi, 0, v0)).toStrictEqual(response);
    expect(encodeResponse(JoinGroupApi, 5, response)).toStrictEqual(v5);
    expect(decodeResponse(JoinGroupApi, 5, v5)).toStrictEqual(response);
  });

  it('MEMBER_ID_REQUIRED (79) answer of v4+: the id to rejoin with, generation −1, no members', () => {
    const bytes = hex(`
      00 00 00 00 | 00 4f         # ThrottleTimeMs 0, ErrorCode 79
      ff ff ff ff                 # GenerationId -1
      00 00 | 00 00               # ProtocolName "", Leader ""
      00 03 6d 2d 31              # MemberId "m-1"
      00 00 00 00                 # Members: 0
    `);
    const response: JoinGroupResponse = { throttleTimeMs: 0, errorCode: 79, generationId: -1, protocolName: '', leader: '', memberId: 'm-1', members: [] };
    expect(encodeResponse(JoinGroupApi, 4, response)).toStrictEqual(bytes);
    expect(decodeResponse(JoinGroupApi, 4, bytes)).toStrictEqual(response);
  });

  it('a null MemberId and trailing bytes are MalformedMessageErrors', () => {
    expect(thrownBy(() => decodeRequest(JoinGroupApi, 0, hex('00 01 67 | 00 00 27 10 | ff ff | 00 00 | 00 00 00 00')))).toBe('MalformedMessageError');
    expect(thrownBy(() => decodeRequest(JoinGroupApi, 0, Buffer.concat([encodeRequest(JoinGroupApi, 0, JOIN_REQUEST), hex('00')])))).toBe('MalformedMessageError');
  });
});

truncationTests(JoinGroupApi, JOIN_REQUEST, JOIN_RESPONSE);

// ---------------------------------------------------------------------------------------------
// SyncGroup

const SYNC_REQUEST: SyncGroupRequest = {
  groupId: 'orders-app',
  generationId: 3,
  memberId: 'consumer-1-4f2c',
  groupInstanceId: 'instance-1',
  assignments: [
    { memberId: 'consumer-1-4f2c', assignment: ASSIGNMENT },
    { memberId: 'consumer-2-9a01', assignment: Buffer.alloc(0) },
  ],
};

const SYNC_RESPONSE: SyncGroupResponse = { throttleTimeMs: 4, errorCode: 0, assignment: ASSIGNMENT };

describe('SyncGroup schema', () => {
  it('serves v0–v3 under api key 14', () => {
    expect(SyncGroupApi.apiKey).toBe(14);
    expect(versionsOf(SyncGroupApi)).toEqual([0, 1, 2, 3]);
  });

  for (const v of versionsOf(SyncGroupApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(SyncGroupApi, v, SYNC_REQUEST)).toStrictEqual({ ...SYNC_REQUEST, groupInstanceId: v >= 3 ? 'instance-1' : null });
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(SyncGroupApi, v, SYNC_RESPONSE)).toStrictEqual({ ...SYNC_RESPONSE, throttleTimeMs: v >= 1 ? 4 : 0 });
    });
  }
});

describe('SyncGroup golden bytes', () => {
  it('v3 request from the leader, carrying a consumer Assignment v0', () => {
    const bytes = hex(`
      00 01 67                    # GroupId "g"
      00 00 00 01                 # GenerationId 1
      00 01 6d                    # MemberId "m"
      ff ff                       # GroupInstanceId null
      00 00 00 01                 # Assignments: 1
      00 01 6d                    #   MemberId "m"
      00 00 00 15                 #   Assignment: 21 bytes, an Assignment:
      00 00                       #     Version 0
      00 00 00 01 | 00 01 74      #     AssignedPartitions: 1, Topic "t"
      00 00 00 01 | 00 00 00 00   #       Partitions [0]
      ff ff ff ff                 #     UserData null
    `);
    const request: SyncGroupRequest = {
      groupId: 'g',
      generationId: 1,
      memberId: 'm',
      groupInstanceId: null,
      assignments: [{ memberId: 'm', assignment: encodeConsumerAssignment({ version: 0, assignedPartitions: [{ topic: 't', partitions: [0] }] }) }],
    };
    expect(encodeRequest(SyncGroupApi, 3, request)).toStrictEqual(bytes);
    const decoded = decodeRequest(SyncGroupApi, 3, bytes);
    expect(decoded).toStrictEqual(request);
    expect(decodeConsumerAssignment(decoded.assignments[0]?.assignment ?? Buffer.alloc(0)).assignedPartitions).toStrictEqual([{ topic: 't', partitions: [0] }]);
  });

  it('v0 request of a follower (no assignments, no GroupInstanceId)', () => {
    const bytes = hex('00 01 67 | 00 00 00 01 | 00 01 6d | 00 00 00 00');
    const request: SyncGroupRequest = { groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: null, assignments: [] };
    expect(encodeRequest(SyncGroupApi, 0, request)).toStrictEqual(bytes);
    expect(decodeRequest(SyncGroupApi, 0, bytes)).toStrictEqual(request);
  });

  it('v0 and v1 responses', () => {
    const v0 = hex('00 1b | 00 00 00 00'); // ErrorCode 27 REBALANCE_IN_PROGRESS, Assignment: 0 bytes
    const v1 = hex('00 00 00 00 | 00 1b | 00 00 00 00');
    const response: SyncGroupResponse = { throttleTimeMs: 0, errorCode: 27, assignment: Buffer.alloc(0) };
    expect(encodeResponse(SyncGroupApi, 0, response)).toStrictEqual(v0);
    expect(decodeResponse(SyncGroupApi, 0, v0)).toStrictEqual(response);
    expect(encodeResponse(SyncGroupApi, 1, response)).toStrictEqual(v1);
    expect(decodeResponse(SyncGroupApi, 1, v1)).toStrictEqual(response);
  });
});

truncationTests(SyncGroupApi, SYNC_REQUEST, SYNC_RESPONSE);

// ---------------------------------------------------------------------------------------------
// Heartbeat

const HEARTBEAT_REQUEST: HeartbeatRequest = { groupId: 'orders-app', generationId: 3, memberId: 'consumer-1-4f2c', groupInstanceId: 'instance-1' };
const HEARTBEAT_RESPONSE: HeartbeatResponse = { throttleTimeMs: 2, errorCode: 27 };

describe('Heartbeat schema', () => {
  it('serves v0–v3 under api key 12', () => {
    expect(HeartbeatApi.apiKey).toBe(12);
    expect(versionsOf(HeartbeatApi)).toEqual([0, 1, 2, 3]);
  });

  for (const v of versionsOf(HeartbeatApi)) {
    it(`round-trips v${v}`, () => {
      expect(roundTripRequest(HeartbeatApi, v, HEARTBEAT_REQUEST)).toStrictEqual({ ...HEARTBEAT_REQUEST, groupInstanceId: v >= 3 ? 'instance-1' : null });
      expect(roundTripResponse(HeartbeatApi, v, HEARTBEAT_RESPONSE)).toStrictEqual({ ...HEARTBEAT_RESPONSE, throttleTimeMs: v >= 1 ? 2 : 0 });
    });
  }
});

describe('Heartbeat golden bytes', () => {
  it('v0 and v3 requests, v0 and v1 responses', () => {
    const v0 = hex('00 01 67 | 00 00 00 02 | 00 01 6d'); // GroupId "g", GenerationId 2, MemberId "m"
    const v3 = hex('00 01 67 | 00 00 00 02 | 00 01 6d | 00 01 69'); // …, GroupInstanceId "i"
    const request: HeartbeatRequest = { groupId: 'g', generationId: 2, memberId: 'm', groupInstanceId: 'i' };
    expect(encodeRequest(HeartbeatApi, 0, request)).toStrictEqual(v0);
    expect(decodeRequest(HeartbeatApi, 0, v0)).toStrictEqual({ ...request, groupInstanceId: null });
    expect(encodeRequest(HeartbeatApi, 3, request)).toStrictEqual(v3);
    expect(decodeRequest(HeartbeatApi, 3, v3)).toStrictEqual(request);

    expect(encodeResponse(HeartbeatApi, 0, { throttleTimeMs: 5, errorCode: 27 })).toStrictEqual(hex('00 1b'));
    expect(decodeResponse(HeartbeatApi, 0, hex('00 1b'))).toStrictEqual({ throttleTimeMs: 0, errorCode: 27 });
    expect(encodeResponse(HeartbeatApi, 1, { throttleTimeMs: 5, errorCode: 0 })).toStrictEqual(hex('00 00 00 05 | 00 00'));
    expect(decodeResponse(HeartbeatApi, 1, hex('00 00 00 05 | 00 00'))).toStrictEqual({ throttleTimeMs: 5, errorCode: 0 });
  });
});

truncationTests(HeartbeatApi, HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE);

// ---------------------------------------------------------------------------------------------
// LeaveGroup

const LEAVE_REQUEST: LeaveGroupRequest = {
  groupId: 'orders-app',
  memberId: 'consumer-1-4f2c',
  members: [
    { memberId: 'consumer-1-4f2c', groupInstanceId: null },
    { memberId: '', groupInstanceId: 'instance-2' },
  ],
};

const LEAVE_RESPONSE: LeaveGroupResponse = {
  throttleTimeMs: 6,
  errorCode: 0,
  members: [
    { memberId: 'consumer-1-4f2c', groupInstanceId: null, errorCode: 0 },
    { memberId: '', groupInstanceId: 'instance-2', errorCode: 25 },
  ],
};

describe('LeaveGroup schema', () => {
  it('serves v0–v3 under api key 13', () => {
    expect(LeaveGroupApi.apiKey).toBe(13);
    expect(versionsOf(LeaveGroupApi)).toEqual([0, 1, 2, 3]);
  });

  for (const v of versionsOf(LeaveGroupApi)) {
    it(`round-trips a v${v} request: ${v >= 3 ? 'Members, MemberId ""' : 'MemberId, Members []'}`, () => {
      expect(roundTripRequest(LeaveGroupApi, v, LEAVE_REQUEST)).toStrictEqual(v >= 3 ? { ...LEAVE_REQUEST, memberId: '' } : { ...LEAVE_REQUEST, members: [] });
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(LeaveGroupApi, v, LEAVE_RESPONSE)).toStrictEqual({ throttleTimeMs: v >= 1 ? 6 : 0, errorCode: 0, members: v >= 3 ? LEAVE_RESPONSE.members : [] });
    });
  }
});

describe('LeaveGroup golden bytes', () => {
  it('v0 request: one MemberId', () => {
    const bytes = hex('00 01 67 | 00 01 6d'); // GroupId "g", MemberId "m"
    expect(encodeRequest(LeaveGroupApi, 0, { groupId: 'g', memberId: 'm', members: [{ memberId: 'x', groupInstanceId: null }] })).toStrictEqual(bytes);
    expect(decodeRequest(LeaveGroupApi, 0, bytes)).toStrictEqual({ groupId: 'g', memberId: 'm', members: [] });
  });

  it('v3 request: a batch of identities', () => {
    const bytes = hex(`
      00 01 67                    # GroupId "g"
      00 00 00 02                 # Members: 2
      00 01 6d | ff ff            #   MemberId "m", GroupInstanceId null
      00 00 | 00 01 69            #   MemberId "", GroupInstanceId "i"
    `);
    const request: LeaveGroupRequest = {
      groupId: 'g',
      memberId: '',
      members: [
        { memberId: 'm', groupInstanceId: null },
        { memberId: '', groupInstanceId: 'i' },
      ],
    };
    expect(encodeRequest(LeaveGroupApi, 3, request)).toStrictEqual(bytes);
    expect(decodeRequest(LeaveGroupApi, 3, bytes)).toStrictEqual(request);
  });

  it('v0 and v3 responses', () => {
    const v0 = hex('00 19'); // ErrorCode 25 UNKNOWN_MEMBER_ID
    const v3 = hex(`
      00 00 00 00 | 00 00         # ThrottleTimeMs 0, ErrorCode 0
      00 00 00 02                 # Members: 2
      00 01 6d | ff ff | 00 00    #   "m", null, ErrorCode 0
      00 00 | 00 01 69 | 00 19    #   "", "i", ErrorCode 25
    `);
    expect(encodeResponse(LeaveGroupApi, 0, { throttleTimeMs: 0, errorCode: 25, members: [] })).toStrictEqual(v0);
    expect(decodeResponse(LeaveGroupApi, 0, v0)).toStrictEqual({ throttleTimeMs: 0, errorCode: 25, members: [] });
    const response: LeaveGroupResponse = {
      throttleTimeMs: 0,
      errorCode: 0,
      members: [
        { memberId: 'm', groupInstanceId: null, errorCode: 0 },
        { memberId: '', groupInstanceId: 'i', errorCode: 25 },
      ],
    };
    expect(encodeResponse(LeaveGroupApi, 3, response)).toStrictEqual(v3);
    expect(decodeResponse(LeaveGroupApi, 3, v3)).toStrictEqual(response);
  });
});

truncationTests(LeaveGroupApi, LEAVE_REQUEST, LEAVE_RESPONSE);

// ---------------------------------------------------------------------------------------------
// DescribeGroups

const DESCRIBE_REQUEST: DescribeGroupsRequest = { groups: ['orders-app', 'audit'], includeAuthorizedOperations: true };

const DESCRIBE_RESPONSE: DescribeGroupsResponse = {
  throttleTimeMs: 1,
  groups: [
    {
      errorCode: 0,
      groupId: 'orders-app',
      groupState: 'Stable',
      protocolType: 'consumer',
      protocolData: 'range',
      members: [
        { memberId: 'consumer-1-4f2c', groupInstanceId: 'instance-1', clientId: 'consumer-1', clientHost: '/10.0.0.7', memberMetadata: SUBSCRIPTION, memberAssignment: ASSIGNMENT },
        { memberId: 'consumer-2-9a01', groupInstanceId: null, clientId: 'consumer-2', clientHost: '/10.0.0.8', memberMetadata: Buffer.alloc(0), memberAssignment: Buffer.alloc(0) },
      ],
      authorizedOperations: 0x0f,
    },
    { errorCode: 0, groupId: 'audit', groupState: 'Dead', protocolType: '', protocolData: '', members: [], authorizedOperations: -2147483648 },
  ],
};

function expectedDescribeResponse(v: number): DescribeGroupsResponse {
  return {
    throttleTimeMs: v >= 1 ? 1 : 0,
    groups: DESCRIBE_RESPONSE.groups.map((g) => ({
      ...g,
      members: g.members.map((m) => ({ ...m, groupInstanceId: v >= 4 ? m.groupInstanceId : null })),
      authorizedOperations: v >= 3 ? g.authorizedOperations : -2147483648,
    })),
  };
}

describe('DescribeGroups schema', () => {
  it('serves v0–v4 under api key 15', () => {
    expect(DescribeGroupsApi.apiKey).toBe(15);
    expect(versionsOf(DescribeGroupsApi)).toEqual([0, 1, 2, 3, 4]);
  });

  for (const v of versionsOf(DescribeGroupsApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(DescribeGroupsApi, v, DESCRIBE_REQUEST)).toStrictEqual({ ...DESCRIBE_REQUEST, includeAuthorizedOperations: v >= 3 });
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(DescribeGroupsApi, v, DESCRIBE_RESPONSE)).toStrictEqual(expectedDescribeResponse(v));
    });
  }
});

describe('DescribeGroups golden bytes', () => {
  it('v0 and v3 requests', () => {
    const v0 = hex('00 00 00 01 | 00 01 67'); // Groups ["g"]
    const v3 = hex('00 00 00 01 | 00 01 67 | 01'); // …, IncludeAuthorizedOperations true
    expect(encodeRequest(DescribeGroupsApi, 0, { groups: ['g'], includeAuthorizedOperations: true })).toStrictEqual(v0);
    expect(decodeRequest(DescribeGroupsApi, 0, v0)).toStrictEqual({ groups: ['g'], includeAuthorizedOperations: false });
    expect(encodeRequest(DescribeGroupsApi, 3, { groups: ['g'], includeAuthorizedOperations: true })).toStrictEqual(v3);
    expect(decodeRequest(DescribeGroupsApi, 3, v3)).toStrictEqual({ groups: ['g'], includeAuthorizedOperations: true });
  });

  const member = {
    v0: `
      00 01 6d                    #     MemberId "m"
      00 01 63                    #     ClientId "c"
      00 02 2f 68                 #     ClientHost "/h"
      00 00 00 01 aa              #     MemberMetadata: 1 byte
      00 00 00 01 bb              #     MemberAssignment: 1 byte
    `,
    v4: `
      00 01 6d                    #     MemberId "m"
      00 01 69                    #     GroupInstanceId "i"
      00 01 63                    #     ClientId "c"
      00 02 2f 68                 #     ClientHost "/h"
      00 00 00 01 aa              #     MemberMetadata: 1 byte
      00 00 00 01 bb              #     MemberAssignment: 1 byte
    `,
  };
  const group = `
      00 00                       #   ErrorCode 0
      00 01 67                    #   GroupId "g"
      00 06 537461626c65          #   GroupState "Stable"
      00 08 636f6e73756d6572      #   ProtocolType "consumer"
      00 05 72616e6765            #   ProtocolData "range"
      00 00 00 01                 #   Members: 1
  `;

  it('v0 response: no throttle, no GroupInstanceId (null), no AuthorizedOperations (−2147483648)', () => {
    const bytes = hex(`00 00 00 01 ${group} ${member.v0}`);
    const response: DescribeGroupsResponse = {
      throttleTimeMs: 0,
      groups: [
        {
          errorCode: 0,
          groupId: 'g',
          groupState: 'Stable',
          protocolType: 'consumer',
          protocolData: 'range',
          members: [{ memberId: 'm', groupInstanceId: null, clientId: 'c', clientHost: '/h', memberMetadata: Buffer.from([0xaa]), memberAssignment: Buffer.from([0xbb]) }],
          authorizedOperations: -2147483648,
        },
      ],
    };
    expect(encodeResponse(DescribeGroupsApi, 0, response)).toStrictEqual(bytes);
    expect(decodeResponse(DescribeGroupsApi, 0, bytes)).toStrictEqual(response);
  });

  it('v4 response', () => {
    const bytes = hex(`
      00 00 00 00                 # ThrottleTimeMs 0
      00 00 00 01                 # Groups: 1
      ${group} ${member.v4}
      00 00 00 08                 #   AuthorizedOperations 1 << 3 (DESCRIBE)
    `);
    const response: DescribeGroupsResponse = {
      throttleTimeMs: 0,
      groups: [
        {
          errorCode: 0,
          groupId: 'g',
          groupState: 'Stable',
          protocolType: 'consumer',
          protocolData: 'range',
          members: [{ memberId: 'm', groupInstanceId: 'i', clientId: 'c', clientHost: '/h', memberMetadata: Buffer.from([0xaa]), memberAssignment: Buffer.from([0xbb]) }],
          authorizedOperations: 8,
        },
      ],
    };
    expect(encodeResponse(DescribeGroupsApi, 4, response)).toStrictEqual(bytes);
    expect(decodeResponse(DescribeGroupsApi, 4, bytes)).toStrictEqual(response);
  });
});

truncationTests(DescribeGroupsApi, DESCRIBE_REQUEST, DESCRIBE_RESPONSE);

// ---------------------------------------------------------------------------------------------
// ListGroups

const LIST_RESPONSE: ListGroupsResponse = {
  throttleTimeMs: 3,
  errorCode: 0,
  groups: [
    { groupId: 'orders-app', protocolType: 'consumer' },
    { groupId: 'connect-cluster', protocolType: 'connect' },
  ],
};

describe('ListGroups schema', () => {
  it('serves v0–v2 under api key 16', () => {
    expect(ListGroupsApi.apiKey).toBe(16);
    expect(versionsOf(ListGroupsApi)).toEqual([0, 1, 2]);
  });

  for (const v of versionsOf(ListGroupsApi)) {
    it(`round-trips v${v} (an empty request)`, () => {
      expect(encodeRequest(ListGroupsApi, v, {}).length).toBe(0);
      expect(decodeRequest(ListGroupsApi, v, Buffer.alloc(0))).toStrictEqual({});
      expect(thrownBy(() => decodeRequest(ListGroupsApi, v, hex('00')))).toBe('MalformedMessageError');
      expect(roundTripResponse(ListGroupsApi, v, LIST_RESPONSE)).toStrictEqual({ ...LIST_RESPONSE, throttleTimeMs: v >= 1 ? 3 : 0 });
    });
  }

  it('golden v0 and v1 responses', () => {
    const groups = `
      00 00 00 01                 # Groups: 1
      00 01 67                    #   GroupId "g"
      00 08 636f6e73756d6572      #   ProtocolType "consumer"
    `;
    const v0 = hex(`00 00 ${groups}`);
    const v1 = hex(`00 00 00 07 | 00 00 ${groups}`);
    const response: ListGroupsResponse = { throttleTimeMs: 7, errorCode: 0, groups: [{ groupId: 'g', protocolType: 'consumer' }] };
    expect(encodeResponse(ListGroupsApi, 0, response)).toStrictEqual(v0);
    expect(decodeResponse(ListGroupsApi, 0, v0)).toStrictEqual({ ...response, throttleTimeMs: 0 });
    expect(encodeResponse(ListGroupsApi, 1, response)).toStrictEqual(v1);
    expect(decodeResponse(ListGroupsApi, 1, v1)).toStrictEqual(response);
  });
});

truncationTests(ListGroupsApi, {}, LIST_RESPONSE);

// ---------------------------------------------------------------------------------------------
// DeleteGroups

const DELETE_REQUEST: DeleteGroupsRequest = { groupsNames: ['orders-app', 'audit'] };
const DELETE_RESPONSE: DeleteGroupsResponse = {
  throttleTimeMs: 8,
  results: [
    { groupId: 'orders-app', errorCode: 68 },
    { groupId: 'audit', errorCode: 0 },
  ],
};

describe('DeleteGroups schema', () => {
  it('serves v0–v1 under api key 42', () => {
    expect(DeleteGroupsApi.apiKey).toBe(42);
    expect(versionsOf(DeleteGroupsApi)).toEqual([0, 1]);
  });

  for (const v of versionsOf(DeleteGroupsApi)) {
    it(`round-trips v${v} (one layout; ThrottleTimeMs from v0)`, () => {
      expect(roundTripRequest(DeleteGroupsApi, v, DELETE_REQUEST)).toStrictEqual(DELETE_REQUEST);
      expect(roundTripResponse(DeleteGroupsApi, v, DELETE_RESPONSE)).toStrictEqual(DELETE_RESPONSE);
    });
  }

  it('golden v0 request and response', () => {
    const request = hex('00 00 00 02 | 00 01 61 | 00 01 62'); // GroupsNames ["a", "b"]
    const response = hex(`
      00 00 00 00                 # ThrottleTimeMs 0
      00 00 00 02                 # Results: 2
      00 01 61 | 00 44            #   "a", ErrorCode 68 NON_EMPTY_GROUP
      00 01 62 | 00 45            #   "b", ErrorCode 69 GROUP_ID_NOT_FOUND
    `);
    expect(encodeRequest(DeleteGroupsApi, 0, { groupsNames: ['a', 'b'] })).toStrictEqual(request);
    expect(decodeRequest(DeleteGroupsApi, 0, request)).toStrictEqual({ groupsNames: ['a', 'b'] });
    const decoded: DeleteGroupsResponse = {
      throttleTimeMs: 0,
      results: [
        { groupId: 'a', errorCode: 68 },
        { groupId: 'b', errorCode: 69 },
      ],
    };
    expect(encodeResponse(DeleteGroupsApi, 0, decoded)).toStrictEqual(response);
    expect(decodeResponse(DeleteGroupsApi, 0, response)).toStrictEqual(decoded);
  });
});

truncationTests(DeleteGroupsApi, DELETE_REQUEST, DELETE_RESPONSE);
