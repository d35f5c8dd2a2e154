import { describe, expect, it } from 'vitest';
import { MetadataApi, type MetadataRequest, type MetadataResponse } from '../../../../src/protocol/apis/metadata.js';
import { isFlexibleVersion } from '../../../../src/protocol/schema.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, thrownBy, truncationTests, versionsOf } from './helpers.js';

const NOT_REQUESTED = -2147483648;

const REQUEST: MetadataRequest = {
  topics: [{ name: 'orders' }, { name: 'clicks' }],
  allowAutoTopicCreation: false,
  includeClusterAuthorizedOperations: true,
  includeTopicAuthorizedOperations: true,
};

/** What a version carries of REQUEST, with Kafka's defaults for the rest. */
function expectedRequest(v: number): MetadataRequest {
  return {
    topics: REQUEST.topics,
    allowAutoTopicCreation: v >= 4 ? false : true,
    includeClusterAuthorizedOperations: v >= 8,
    includeTopicAuthorizedOperations: v >= 8,
  };
}

const RESPONSE: MetadataResponse = {
  throttleTimeMs: 50,
  brokers: [
    { nodeId: 1, host: 'broker-1.tributary.local', port: 9092, rack: 'rack-a' },
    { nodeId: 2, host: 'broker-2.tributary.local', port: 9093, rack: null },
  ],
  clusterId: 'tributary-cluster',
  controllerId: 1,
  topics: [
    {
      errorCode: 0,
      name: 'orders',
      isInternal: true,
      partitions: [
        { errorCode: 0, partitionIndex: 0, leaderId: 1, leaderEpoch: 7, replicaNodes: [1, 2], isrNodes: [1], offlineReplicas: [2] },
        { errorCode: 9, partitionIndex: 1, leaderId: 2, leaderEpoch: 3, replicaNodes: [2, 1], isrNodes: [2, 1], offlineReplicas: [] },
      ],
      topicAuthorizedOperations: 0x0df8,
    },
    { errorCode: 3, name: 'missing', isInternal: false, partitions: [], topicAuthorizedOperations: 0 },
  ],
  clusterAuthorizedOperations: 0x01fe,
};

function expectedResponse(v: number): MetadataResponse {
  return {
    throttleTimeMs: v >= 3 ? 50 : 0,
    brokers: RESPONSE.brokers.map((b) => ({ ...b, rack: v >= 1 ? b.rack : null })),
    clusterId: v >= 2 ? 'tributary-cluster' : null,
    controllerId: v >= 1 ? 1 : -1,
    topics: RESPONSE.topics.map((t) => ({
      errorCode: t.errorCode,
      name: t.name,
      isInternal: v >= 1 ? t.isInternal : false,
      partitions: t.partitions.map((p) => ({
        ...p,
        leaderEpoch: v >= 7 ? p.leaderEpoch : -1,
        offlineReplicas: v >= 5 ? p.offlineReplicas : [],
      })),
      topicAuthorizedOperations: v >= 8 ? t.topicAuthorizedOperations : NOT_REQUESTED,
    })),
    clusterAuthorizedOperations: v >= 8 ? 0x01fe : NOT_REQUESTED,
  };
}

describe('Metadata schema', () => {
  it('serves v0–v9 under api key 3, v9 the only flexible one', () => {
    expect(MetadataApi.apiKey).toBe(3);
    expect(versionsOf(MetadataApi)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(versionsOf(MetadataApi).filter((v) => isFlexibleVersion(MetadataApi, v))).toEqual([9]);
  });

  for (const v of versionsOf(MetadataApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(MetadataApi, v, REQUEST)).toStrictEqual(expectedRequest(v));
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(MetadataApi, v, RESPONSE)).toStrictEqual(expectedResponse(v));
    });
  }

  it('reads a null topic array as "all topics" from v1 on', () => {
    for (const v of versionsOf(MetadataApi).filter((x) => x >= 1)) {
      expect(roundTripRequest(MetadataApi, v, { ...REQUEST, topics: null }).topics).toBeNull();
    }
  });

  it('keeps an empty topic array distinct from null in v1+', () => {
    expect(roundTripRequest(MetadataApi, 1, { ...REQUEST, topics: [] }).topics).toStrictEqual([]);
  });

  it('reads a null topic array as "all topics" in v9 too (compact count 0)', () => {
    expect(decodeRequest(MetadataApi, 9, hex('00 | 01 | 00 | 00 | 00')).topics).toBeNull();
    expect(decodeRequest(MetadataApi, 9, hex('01 | 01 | 00 | 00 | 00')).topics).toStrictEqual([]);
  });

  it('rejects a null topic array in v0, where the array is not nullable', () => {
    expect(thrownBy(() => decodeRequest(MetadataApi, 0, hex('ff ff ff ff')))).toBe('MalformedMessageError');
    expect(thrownBy(() => encodeRequest(MetadataApi, 0, { ...REQUEST, topics: null }))).toMatch(/^TypeError/);
  });
});

describe('Metadata golden bytes', () => {
  it('v0 request: Topics [orders, t]', () => {
    const bytes = hex(`
      00 00 00 02                 # Topics: 2 elements
      00 06 6f 72 64 65 72 73     #   Name "orders"
      00 01 74                    #   Name "t"
    `);
    const request: MetadataRequest = { ...expectedRequest(0), topics: [{ name: 'orders' }, { name: 't' }] };
    expect(encodeRequest(MetadataApi, 0, request)).toStrictEqual(bytes);
    expect(decodeRequest(MetadataApi, 0, bytes)).toStrictEqual(request);
  });

  it('v4 request: all topics, no auto-creation', () => {
    const bytes = hex('ff ff ff ff | 00');
    const request: MetadataRequest = { topics: null, allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false };
    expect(encodeRequest(MetadataApi, 4, request)).toStrictEqual(bytes);
    expect(decodeRequest(MetadataApi, 4, bytes)).toStrictEqual(request);
  });

  it('v8 request: both authorized-operations flags follow AllowAutoTopicCreation', () => {
    const bytes = hex('00 00 00 01 | 00 01 74 | 01 | 00 | 01');
    const request: MetadataRequest = { topics: [{ name: 't' }], allowAutoTopicCreation: true, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: true };
    expect(encodeRequest(MetadataApi, 8, request)).toStrictEqual(bytes);
    expect(decodeRequest(MetadataApi, 8, bytes)).toStrictEqual(request);
  });

  it('v0 response', () => {
    const bytes = hex(`
      00 00 00 01                 # Brokers: 1
      00 00 00 01 | 00 01 68 | 00 00 23 84     # NodeId 1, Host "h", Port 9092
      00 00 00 01                 # Topics: 1
      00 00 | 00 01 74            #   ErrorCode 0, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 | 00 00 00 02 | 00 00 00 01        # ErrorCode 0, PartitionIndex 2, LeaderId 1
      00 00 00 01 00 00 00 01     #     ReplicaNodes [1]
      00 00 00 00                 #     IsrNodes []
    `);
    const response = decodeResponse(MetadataApi, 0, bytes);
    expect(response).toStrictEqual({
      throttleTimeMs: 0,
      brokers: [{ nodeId: 1, host: 'h', port: 9092, rack: null }],
      clusterId: null,
      controllerId: -1,
      topics: [
        {
          errorCode: 0,
          name: 't',
          isInternal: false,
          partitions: [{ errorCode: 0, partitionIndex: 2, leaderId: 1, leaderEpoch: -1, replicaNodes: [1], isrNodes: [], offlineReplicas: [] }],
          topicAuthorizedOperations: NOT_REQUESTED,
        },
      ],
      clusterAuthorizedOperations: NOT_REQUESTED,
    });
    expect(encodeResponse(MetadataApi, 0, response)).toStrictEqual(bytes);
  });

  it('v8 response', () => {
    const bytes = hex(`
      00 00 00 00                 # ThrottleTimeMs 0
      00 00 00 01                 # Brokers: 1
      00 00 00 01 | 00 01 68 | 00 00 23 84 | ff ff   # NodeId 1, Host "h", Port 9092, Rack null
      00 01 63                    # ClusterId "c"
      00 00 00 01                 # ControllerId 1
      00 00 00 01                 # Topics: 1
      00 00 | 00 01 74 | 00       #   ErrorCode 0, Name "t", IsInternal false
      00 00 00 01                 #   Partitions: 1
      00 00 | 00 00 00 02 | 00 00 00 01 | 00 00 00 05   # ErrorCode, PartitionIndex 2, LeaderId 1, LeaderEpoch 5
      00 00 00 01 00 00 00 01     #     ReplicaNodes [1]
      00 00 00 01 00 00 00 01     #     IsrNodes [1]
      00 00 00 00                 #     OfflineReplicas []
      80 00 00 00                 #   TopicAuthorizedOperations (not requested)
      00 00 01 fe                 # ClusterAuthorizedOperations
    `);
    const response: MetadataResponse = {
      throttleTimeMs: 0,
      brokers: [{ nodeId: 1, host: 'h', port: 9092, rack: null }],
      clusterId: 'c',
      controllerId: 1,
      topics: [
        {
          errorCode: 0,
          name: 't',
          isInternal: false,
          partitions: [{ errorCode: 0, partitionIndex: 2, leaderId: 1, leaderEpoch: 5, replicaNodes: [1], isrNodes: [1], offlineReplicas: [] }],
          topicAuthorizedOperations: NOT_REQUESTED,
        },
      ],
      clusterAuthorizedOperations: 0x01fe,
    };
    expect(encodeResponse(MetadataApi, 8, response)).toStrictEqual(bytes);
    expect(decodeResponse(MetadataApi, 8, bytes)).toStrictEqual(response);
  });
});

describe('Metadata v9 golden bytes (flexible)', () => {
  it('v9 request: compact Topics and Name, a TAG_BUFFER after each topic and after the request', () => {
    const bytes = hex(`
      03                          # Topics: 2 elements (compact: count + 1)
      07 6f 72 64 65 72 73        #   Name "orders" (compact: length + 1)
      00                          #   TAG_BUFFER (no tagged fields)
      02 74                       #   Name "t"
      00                          #   TAG_BUFFER
      01                          # AllowAutoTopicCreation true
      00                          # IncludeClusterAuthorizedOperations false
      01                          # IncludeTopicAuthorizedOperations true
      00                          # TAG_BUFFER
    `);
    const request: MetadataRequest = { topics: [{ name: 'orders' }, { name: 't' }], allowAutoTopicCreation: true, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: true };
    expect(encodeRequest(MetadataApi, 9, request)).toStrictEqual(bytes);
    expect(decodeRequest(MetadataApi, 9, bytes)).toStrictEqual(request);
  });

  it('v9 request: all topics (null compact array)', () => {
    const bytes = hex('00 | 00 | 00 | 00 | 00');
    const request: MetadataRequest = { topics: null, allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false };
    expect(encodeRequest(MetadataApi, 9, request)).toStrictEqual(bytes);
    expect(decodeRequest(MetadataApi, 9, bytes)).toStrictEqual(request);
  });

  it('v9 request: unknown tagged fields are skipped, in a topic and after the request', () => {
    const bytes = hex(`
      02 | 02 74 | 01 | 00 02 ab cd      # one topic "t" with tag 0 (2 bytes)
      01 | 00 | 00
      02 | 01 00 | 7f 01 ee             # two tags: 1 (empty) and 127 (1 byte)
    `);
    expect(decodeRequest(MetadataApi, 9, bytes)).toStrictEqual({ topics: [{ name: 't' }], allowAutoTopicCreation: true, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
  });

  it('v9 request: the v8 layout is refused at v9 (and the other way round)', () => {
    expect(thrownBy(() => decodeRequest(MetadataApi, 9, hex('00 00 00 01 | 00 01 74 | 01 | 00 | 01')))).toBe('MalformedMessageError');
    expect(thrownBy(() => decodeRequest(MetadataApi, 8, hex('02 | 02 74 | 00 | 01 | 00 | 01 | 00')))).toBe('MalformedMessageError');
  });

  const V9_RESPONSE = hex(`
    00 00 00 00                 # ThrottleTimeMs 0
    03                          # Brokers: 2
    00 00 00 01 | 02 68 | 00 00 23 84 | 00 | 00       # NodeId 1, Host "h", Port 9092, Rack null, TAG_BUFFER
    00 00 00 02 | 02 69 | 00 00 23 85 | 02 72 | 00    # NodeId 2, Host "i", Port 9093, Rack "r", TAG_BUFFER
    02 63                       # ClusterId "c"
    00 00 00 01                 # ControllerId 1
    02                          # Topics: 1
    00 00 | 02 74 | 00          #   ErrorCode 0, Name "t", IsInternal false
    02                          #   Partitions: 1
    00 00 | 00 00 00 02 | 00 00 00 01 | 00 00 00 05   # ErrorCode, PartitionIndex 2, LeaderId 1, LeaderEpoch 5
    03 00 00 00 01 00 00 00 02  #     ReplicaNodes [1, 2]
    02 00 00 00 01              #     IsrNodes [1]
    02 00 00 00 02              #     OfflineReplicas [2]
    00                          #     TAG_BUFFER (partition)
    80 00 00 00                 #   TopicAuthorizedOperations (not requested)
    00                          #   TAG_BUFFER (topic)
    80 00 00 00                 # ClusterAuthorizedOperations (not requested)
    00                          # TAG_BUFFER
  `);
  const V9_DECODED: MetadataResponse = {
    throttleTimeMs: 0,
    brokers: [
      { nodeId: 1, host: 'h', port: 9092, rack: null },
      { nodeId: 2, host: 'i', port: 9093, rack: 'r' },
    ],
    clusterId: 'c',
    controllerId: 1,
    topics: [
      {
        errorCode: 0,
        name: 't',
        isInternal: false,
        partitions: [{ errorCode: 0, partitionIndex: 2, leaderId: 1, leaderEpoch: 5, replicaNodes: [1, 2], isrNodes: [1], offlineReplicas: [2] }],
        topicAuthorizedOperations: NOT_REQUESTED,
      },
    ],
    clusterAuthorizedOperations: NOT_REQUESTED,
  };

  it('v9 response: compact arrays and strings, a TAG_BUFFER after each broker, partition, topic and the response', () => {
    expect(encodeResponse(MetadataApi, 9, V9_DECODED)).toStrictEqual(V9_RESPONSE);
    expect(decodeResponse(MetadataApi, 9, V9_RESPONSE)).toStrictEqual(V9_DECODED);
  });

  it('v9 response: a null ClusterId is a 0 length', () => {
    const bytes = encodeResponse(MetadataApi, 9, { ...V9_DECODED, brokers: [], topics: [], clusterId: null });
    expect(bytes).toStrictEqual(hex('00 00 00 00 | 01 | 00 | 00 00 00 01 | 01 | 80 00 00 00 | 00'));
  });
});

truncationTests(MetadataApi, REQUEST, RESPONSE);
