import { describe, expect, it } from 'vitest';
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListOffsetsApi, type ListOffsetsRequest, type ListOffsetsResponse } from '../../../../src/protocol/apis/list-offsets.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, versionsOf } from './helpers.js';

const REQUEST: ListOffsetsRequest = {
  replicaId: -1,
  isolationLevel: 1,
  topics: [
    {
      name: 'orders',
      partitions: [
        { partitionIndex: 0, currentLeaderEpoch: 4, timestamp: LATEST_TIMESTAMP },
        { partitionIndex: 1, currentLeaderEpoch: 4, timestamp: EARLIEST_TIMESTAMP },
        { partitionIndex: 2, currentLeaderEpoch: 5, timestamp: 1_700_000_000_000n },
      ],
    },
  ],
};

function expectedRequest(v: number): ListOffsetsRequest {
  return {
    replicaId: -1,
    isolationLevel: v >= 2 ? 1 : 0,
    topics: REQUEST.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ ...p, currentLeaderEpoch: v >= 4 ? p.currentLeaderEpoch : -1 })) })),
  };
}

const RESPONSE: ListOffsetsResponse = {
  throttleTimeMs: 15,
  topics: [
    {
      name: 'orders',
      partitions: [
        { partitionIndex: 0, errorCode: 0, timestamp: -1n, offset: 1_234n, leaderEpoch: 4 },
        { partitionIndex: 1, errorCode: 0, timestamp: 1_700_000_000_123n, offset: 77n, leaderEpoch: 4 },
        { partitionIndex: 2, errorCode: 78, timestamp: -1n, offset: -1n, leaderEpoch: -1 },
      ],
    },
  ],
};

function expectedResponse(v: number): ListOffsetsResponse {
  return {
    throttleTimeMs: v >= 2 ? 15 : 0,
    topics: RESPONSE.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ ...p, leaderEpoch: v >= 4 ? p.leaderEpoch : -1 })) })),
  };
}

describe('ListOffsets schema', () => {
  it('serves v1–v5 under api key 2', () => {
    expect(ListOffsetsApi.apiKey).toBe(2);
    expect(versionsOf(ListOffsetsApi)).toEqual([1, 2, 3, 4, 5]);
  });

  for (const v of versionsOf(ListOffsetsApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(ListOffsetsApi, v, REQUEST)).toStrictEqual(expectedRequest(v));
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(ListOffsetsApi, v, RESPONSE)).toStrictEqual(expectedResponse(v));
    });
  }
});

describe('ListOffsets golden bytes', () => {
  const topic = (currentLeaderEpoch: number) => [{ name: 't', partitions: [{ partitionIndex: 2, currentLeaderEpoch, timestamp: EARLIEST_TIMESTAMP }] }];

  it('v1 request', () => {
    const bytes = hex(`
      ff ff ff ff                 # ReplicaId -1
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02                 #     PartitionIndex 2
      ff ff ff ff ff ff ff fe     #     Timestamp -2 (earliest)
    `);
    const request: ListOffsetsRequest = { replicaId: -1, isolationLevel: 0, topics: topic(-1) };
    expect(encodeRequest(ListOffsetsApi, 1, request)).toStrictEqual(bytes);
    expect(decodeRequest(ListOffsetsApi, 1, bytes)).toStrictEqual(request);
  });

  it('v5 request', () => {
    const bytes = hex(`
      ff ff ff ff                 # ReplicaId -1
      01                          # IsolationLevel 1
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02                 #     PartitionIndex 2
      00 00 00 04                 #     CurrentLeaderEpoch 4
      ff ff ff ff ff ff ff fe     #     Timestamp -2 (earliest)
    `);
    const request: ListOffsetsRequest = { replicaId: -1, isolationLevel: 1, topics: topic(4) };
    expect(encodeRequest(ListOffsetsApi, 5, request)).toStrictEqual(bytes);
    expect(decodeRequest(ListOffsetsApi, 5, bytes)).toStrictEqual(request);
  });

  it('v1 and v5 responses', () => {
    const v1 = hex(`
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02 | 00 00         #     PartitionIndex 2, ErrorCode 0
      ff ff ff ff ff ff ff ff     #     Timestamp -1
      00 00 00 00 00 00 00 2a     #     Offset 42
    `);
    const v5 = hex(`
      00 00 00 00                 # ThrottleTimeMs 0
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02 | 00 00         #     PartitionIndex 2, ErrorCode 0
      ff ff ff ff ff ff ff ff     #     Timestamp -1
      00 00 00 00 00 00 00 2a     #     Offset 42
      00 00 00 04                 #     LeaderEpoch 4
    `);
    const response = (leaderEpoch: number): ListOffsetsResponse => ({
      throttleTimeMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 2, errorCode: 0, timestamp: -1n, offset: 42n, leaderEpoch }] }],
    });
    expect(encodeResponse(ListOffsetsApi, 1, response(4))).toStrictEqual(v1);
    expect(decodeResponse(ListOffsetsApi, 1, v1)).toStrictEqual(response(-1));
    expect(encodeResponse(ListOffsetsApi, 5, response(4))).toStrictEqual(v5);
    expect(decodeResponse(ListOffsetsApi, 5, v5)).toStrictEqual(response(4));
  });
});
