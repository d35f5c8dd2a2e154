import { describe, expect, it } from 'vitest';
import {
  DEBUG_REPLICA_ID,
  OffsetForLeaderEpochApi,
  UNDEFINED_EPOCH,
  UNDEFINED_EPOCH_OFFSET,
  type OffsetForLeaderEpochRequest,
  type OffsetForLeaderEpochResponse,
} from '../../../../src/protocol/apis/offset-for-leader-epoch.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, truncationTests, versionsOf } from './helpers.js';

const REQUEST: OffsetForLeaderEpochRequest = {
  replicaId: 2,
  topics: [
    {
      topic: 'orders',
      partitions: [
        { partition: 0, currentLeaderEpoch: 7, leaderEpoch: 5 },
        { partition: 3, currentLeaderEpoch: 7, leaderEpoch: 7 },
      ],
    },
    { topic: 'clicks', partitions: [{ partition: 1, currentLeaderEpoch: 2, leaderEpoch: 0 }] },
  ],
};

/** What a version keeps of REQUEST: ReplicaId from v3, CurrentLeaderEpoch from v2, else the defaults. */
function expectedRequest(v: number): OffsetForLeaderEpochRequest {
  return {
    replicaId: v >= 3 ? REQUEST.replicaId : DEBUG_REPLICA_ID,
    topics: REQUEST.topics.map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => ({ ...p, currentLeaderEpoch: v >= 2 ? p.currentLeaderEpoch : UNDEFINED_EPOCH })) })),
  };
}

const RESPONSE: OffsetForLeaderEpochResponse = {
  throttleTimeMs: 25,
  topics: [
    {
      topic: 'orders',
      partitions: [
        { errorCode: 0, partition: 0, leaderEpoch: 5, endOffset: 1_000n },
        { errorCode: 74, partition: 3, leaderEpoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET },
      ],
    },
    { topic: 'clicks', partitions: [{ errorCode: 0, partition: 1, leaderEpoch: 0, endOffset: 2n ** 40n }] },
  ],
};

/** What a version keeps of RESPONSE: ThrottleTimeMs from v2, LeaderEpoch from v1. */
function expectedResponse(v: number): OffsetForLeaderEpochResponse {
  return {
    throttleTimeMs: v >= 2 ? RESPONSE.throttleTimeMs : 0,
    topics: RESPONSE.topics.map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => ({ ...p, leaderEpoch: v >= 1 ? p.leaderEpoch : UNDEFINED_EPOCH })) })),
  };
}

describe('OffsetForLeaderEpoch schema', () => {
  it('serves v0–v3 (the non-flexible versions) under api key 23', () => {
    expect(OffsetForLeaderEpochApi.apiKey).toBe(23);
    expect(OffsetForLeaderEpochApi.name).toBe('OffsetForLeaderEpoch');
    expect(versionsOf(OffsetForLeaderEpochApi)).toEqual([0, 1, 2, 3]);
  });

  for (const v of versionsOf(OffsetForLeaderEpochApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(OffsetForLeaderEpochApi, v, REQUEST)).toStrictEqual(expectedRequest(v));
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(OffsetForLeaderEpochApi, v, RESPONSE)).toStrictEqual(expectedResponse(v));
    });
  }
});

describe('OffsetForLeaderEpoch golden bytes', () => {
  const request = (replicaId: number, currentLeaderEpoch: number): OffsetForLeaderEpochRequest => ({
    replicaId,
    topics: [{ topic: 't', partitions: [{ partition: 2, currentLeaderEpoch, leaderEpoch: 4 }] }],
  });
  const response = (leaderEpoch: number, throttleTimeMs: number): OffsetForLeaderEpochResponse => ({
    throttleTimeMs,
    topics: [{ topic: 't', partitions: [{ errorCode: 0, partition: 2, leaderEpoch, endOffset: 42n }] }],
  });

  it('v0 request: no ReplicaId, no CurrentLeaderEpoch', () => {
    const bytes = hex(`
      00 00 00 01 | 00 01 74      # Topics: 1, Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02                 #     Partition 2
      00 00 00 04                 #     LeaderEpoch 4
    `);
    expect(encodeRequest(OffsetForLeaderEpochApi, 0, request(1, 9))).toStrictEqual(bytes);
    expect(decodeRequest(OffsetForLeaderEpochApi, 0, bytes)).toStrictEqual(request(DEBUG_REPLICA_ID, UNDEFINED_EPOCH));
  });

  it('v2 request: CurrentLeaderEpoch before LeaderEpoch', () => {
    const bytes = hex(`
      00 00 00 01 | 00 01 74      # Topics: 1, Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02                 #     Partition 2
      00 00 00 09                 #     CurrentLeaderEpoch 9
      00 00 00 04                 #     LeaderEpoch 4
    `);
    expect(encodeRequest(OffsetForLeaderEpochApi, 2, request(1, 9))).toStrictEqual(bytes);
    expect(decodeRequest(OffsetForLeaderEpochApi, 2, bytes)).toStrictEqual(request(DEBUG_REPLICA_ID, 9));
  });

  it('v3 request: ReplicaId first', () => {
    const bytes = hex(`
      00 00 00 01                 # ReplicaId 1 (a follower)
      00 00 00 01 | 00 01 74      # Topics: 1, Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02                 #     Partition 2
      00 00 00 09                 #     CurrentLeaderEpoch 9
      00 00 00 04                 #     LeaderEpoch 4
    `);
    expect(encodeRequest(OffsetForLeaderEpochApi, 3, request(1, 9))).toStrictEqual(bytes);
    expect(decodeRequest(OffsetForLeaderEpochApi, 3, bytes)).toStrictEqual(request(1, 9));
  });

  it('a v3 request from a consumer carries ReplicaId -1 and may leave CurrentLeaderEpoch unset', () => {
    const bytes = hex(`
      ff ff ff ff                 # ReplicaId -1 (a consumer)
      00 00 00 01 | 00 01 74      # Topics: 1, Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02                 #     Partition 2
      ff ff ff ff                 #     CurrentLeaderEpoch -1
      00 00 00 04                 #     LeaderEpoch 4
    `);
    expect(decodeRequest(OffsetForLeaderEpochApi, 3, bytes)).toStrictEqual(request(-1, -1));
  });

  it('v0 response: ErrorCode, Partition, EndOffset', () => {
    const bytes = hex(`
      00 00 00 01 | 00 01 74      # Topics: 1, Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 | 00 00 00 02         #     ErrorCode 0, Partition 2
      00 00 00 00 00 00 00 2a     #     EndOffset 42
    `);
    expect(encodeResponse(OffsetForLeaderEpochApi, 0, response(4, 10))).toStrictEqual(bytes);
    expect(decodeResponse(OffsetForLeaderEpochApi, 0, bytes)).toStrictEqual(response(UNDEFINED_EPOCH, 0));
  });

  it('v2 and v3 responses: ThrottleTimeMs, and LeaderEpoch before EndOffset', () => {
    const bytes = hex(`
      00 00 00 0a                 # ThrottleTimeMs 10
      00 00 00 01 | 00 01 74      # Topics: 1, Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 | 00 00 00 02         #     ErrorCode 0, Partition 2
      00 00 00 04                 #     LeaderEpoch 4
      00 00 00 00 00 00 00 2a     #     EndOffset 42
    `);
    for (const v of [2, 3]) {
      expect(encodeResponse(OffsetForLeaderEpochApi, v, response(4, 10))).toStrictEqual(bytes);
      expect(decodeResponse(OffsetForLeaderEpochApi, v, bytes)).toStrictEqual(response(4, 10));
    }
  });

  it('an error answer: FENCED_LEADER_EPOCH with the undefined epoch and offset', () => {
    const bytes = hex(`
      00 00 00 00                 # ThrottleTimeMs 0
      00 00 00 01 | 00 01 74      # Topics: 1, Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 4a | 00 00 00 02         #     ErrorCode 74, Partition 2
      ff ff ff ff                 #     LeaderEpoch -1
      ff ff ff ff ff ff ff ff     #     EndOffset -1
    `);
    const fenced: OffsetForLeaderEpochResponse = {
      throttleTimeMs: 0,
      topics: [{ topic: 't', partitions: [{ errorCode: 74, partition: 2, leaderEpoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET }] }],
    };
    expect(encodeResponse(OffsetForLeaderEpochApi, 3, fenced)).toStrictEqual(bytes);
    expect(decodeResponse(OffsetForLeaderEpochApi, 3, bytes)).toStrictEqual(fenced);
  });
});

truncationTests(OffsetForLeaderEpochApi, REQUEST, RESPONSE);
