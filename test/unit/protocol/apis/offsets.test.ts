/**
 * OffsetCommit (8) and OffsetFetch (9): round trips per served version (absent fields decode to
 * Kafka's defaults), golden bytes laid out by hand from Kafka's message definitions, truncation.
 */
import { describe, expect, it } from 'vitest';
import {
  OffsetCommitApi,
  OffsetFetchApi,
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
} from '../../../../src/protocol/apis/index.js';
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

// ---------------------------------------------------------------------------------------------
// OffsetCommit

const COMMIT_REQUEST: OffsetCommitRequest = {
  groupId: 'orders-app',
  generationIdOrMemberEpoch: 3,
  memberId: 'consumer-1-4f2c',
  groupInstanceId: 'instance-1',
  retentionTimeMs: 86_400_000n,
  topics: [
    {
      name: 'orders',
      partitions: [
        { partitionIndex: 0, committedOffset: 1_234n, committedLeaderEpoch: 5, committedMetadata: null },
        { partitionIndex: 1, committedOffset: 0n, committedLeaderEpoch: 5, committedMetadata: 'checkpoint' },
      ],
    },
    { name: 'payments', partitions: [{ partitionIndex: 7, committedOffset: 9_007_199_254_740_993n, committedLeaderEpoch: 2, committedMetadata: '' }] },
  ],
};

function expectedCommitRequest(v: number): OffsetCommitRequest {
  return {
    ...COMMIT_REQUEST,
    groupInstanceId: v >= 7 ? 'instance-1' : null,
    retentionTimeMs: v <= 4 ? 86_400_000n : -1n,
    topics: COMMIT_REQUEST.topics.map((t) => ({ ...t, partitions: t.partitions.map((p) => ({ ...p, committedLeaderEpoch: v >= 6 ? p.committedLeaderEpoch : -1 })) })),
  };
}

const COMMIT_RESPONSE: OffsetCommitResponse = {
  throttleTimeMs: 12,
  topics: [
    {
      name: 'orders',
      partitions: [
        { partitionIndex: 0, errorCode: 0 },
        { partitionIndex: 1, errorCode: 22 },
      ],
    },
  ],
};

describe('OffsetCommit schema', () => {
  it('serves v2–v7 under api key 8', () => {
    expect(OffsetCommitApi.apiKey).toBe(8);
    expect(versionsOf(OffsetCommitApi)).toEqual([2, 3, 4, 5, 6, 7]);
  });

  for (const v of versionsOf(OffsetCommitApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(OffsetCommitApi, v, COMMIT_REQUEST)).toStrictEqual(expectedCommitRequest(v));
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(OffsetCommitApi, v, COMMIT_RESPONSE)).toStrictEqual({ ...COMMIT_RESPONSE, throttleTimeMs: v >= 3 ? 12 : 0 });
    });
  }
});

describe('OffsetCommit golden bytes', () => {
  it('v2 request: a simple commit (generation −1, no member) with RetentionTimeMs', () => {
    const bytes = hex(`
      00 01 67                    # GroupId "g"
      ff ff ff ff                 # GenerationIdOrMemberEpoch -1
      00 00                       # MemberId ""
      ff ff ff ff ff ff ff ff     # RetentionTimeMs -1
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 00                 #     PartitionIndex 0
      00 00 00 00 00 00 00 2a     #     CommittedOffset 42
      ff ff                       #     CommittedMetadata null
    `);
    const request: OffsetCommitRequest = {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    };
    expect(encodeRequest(OffsetCommitApi, 2, { ...request, groupInstanceId: 'x', topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 9, committedMetadata: null }] }] })).toStrictEqual(bytes);
    expect(decodeRequest(OffsetCommitApi, 2, bytes)).toStrictEqual(request);
  });

  it('v7 request: no RetentionTimeMs (decodes −1), CommittedLeaderEpoch and GroupInstanceId', () => {
    const bytes = hex(`
      00 01 67                    # GroupId "g"
      00 00 00 03                 # GenerationIdOrMemberEpoch 3
      00 01 6d                    # MemberId "m"
      00 01 69                    # GroupInstanceId "i"
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 00                 #     PartitionIndex 0
      00 00 00 00 00 00 00 2a     #     CommittedOffset 42
      00 00 00 05                 #     CommittedLeaderEpoch 5
      00 01 78                    #     CommittedMetadata "x"
    `);
    const request: OffsetCommitRequest = {
      groupId: 'g',
      generationIdOrMemberEpoch: 3,
      memberId: 'm',
      groupInstanceId: 'i',
      retentionTimeMs: -1n,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 5, committedMetadata: 'x' }] }],
    };
    expect(encodeRequest(OffsetCommitApi, 7, { ...request, retentionTimeMs: 1000n })).toStrictEqual(bytes);
    expect(decodeRequest(OffsetCommitApi, 7, bytes)).toStrictEqual(request);
  });

  it('v2 and v3 responses', () => {
    const topics = `
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 00 | 00 16         #     PartitionIndex 0, ErrorCode 22 ILLEGAL_GENERATION
    `;
    const v2 = hex(topics);
    const v3 = hex(`00 00 00 00 ${topics}`);
    const response: OffsetCommitResponse = { throttleTimeMs: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 0, errorCode: 22 }] }] };
    expect(encodeResponse(OffsetCommitApi, 2, response)).toStrictEqual(v2);
    expect(decodeResponse(OffsetCommitApi, 2, v2)).toStrictEqual(response);
    expect(encodeResponse(OffsetCommitApi, 3, response)).toStrictEqual(v3);
    expect(decodeResponse(OffsetCommitApi, 3, v3)).toStrictEqual(response);
  });

  it('a null GroupId or topic name is a MalformedMessageError', () => {
    expect(thrownBy(() => decodeRequest(OffsetCommitApi, 5, hex('ff ff | ff ff ff ff | 00 00 | 00 00 00 00')))).toBe('MalformedMessageError');
    expect(thrownBy(() => decodeRequest(OffsetCommitApi, 5, hex('00 01 67 | ff ff ff ff | 00 00 | 00 00 00 01 | ff ff | 00 00 00 00')))).toBe('MalformedMessageError');
  });
});

truncationTests(OffsetCommitApi, COMMIT_REQUEST, COMMIT_RESPONSE);

// ---------------------------------------------------------------------------------------------
// OffsetFetch

const FETCH_REQUEST: OffsetFetchRequest = {
  groupId: 'orders-app',
  topics: [
    { name: 'orders', partitionIndexes: [0, 1, 2] },
    { name: 'payments', partitionIndexes: [] },
  ],
};

const FETCH_RESPONSE: OffsetFetchResponse = {
  throttleTimeMs: 11,
  topics: [
    {
      name: 'orders',
      partitions: [
        { partitionIndex: 0, committedOffset: 1_234n, committedLeaderEpoch: 5, metadata: 'checkpoint', errorCode: 0 },
        { partitionIndex: 1, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: 0 },
        { partitionIndex: 2, committedOffset: -1n, committedLeaderEpoch: -1, metadata: null, errorCode: 3 },
      ],
    },
  ],
  errorCode: 16,
};

function expectedFetchResponse(v: number): OffsetFetchResponse {
  return {
    throttleTimeMs: v >= 3 ? 11 : 0,
    topics: FETCH_RESPONSE.topics.map((t) => ({ ...t, partitions: t.partitions.map((p) => ({ ...p, committedLeaderEpoch: v >= 5 ? p.committedLeaderEpoch : -1 })) })),
    errorCode: v >= 2 ? 16 : 0,
  };
}

describe('OffsetFetch schema', () => {
  it('serves v1–v5 under api key 9', () => {
    expect(OffsetFetchApi.apiKey).toBe(9);
    expect(versionsOf(OffsetFetchApi)).toEqual([1, 2, 3, 4, 5]);
  });

  for (const v of versionsOf(OffsetFetchApi)) {
    it(`round-trips a v${v} request${v >= 2 ? ', and a null Topics (all topics)' : ''}`, () => {
      expect(roundTripRequest(OffsetFetchApi, v, FETCH_REQUEST)).toStrictEqual(FETCH_REQUEST);
      if (v >= 2) expect(roundTripRequest(OffsetFetchApi, v, { groupId: 'g', topics: null })).toStrictEqual({ groupId: 'g', topics: null });
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(OffsetFetchApi, v, FETCH_RESPONSE)).toStrictEqual(expectedFetchResponse(v));
    });
  }

  it('a null Topics is refused in v1, both ways', () => {
    expect(thrownBy(() => encodeRequest(OffsetFetchApi, 1, { groupId: 'g', topics: null }))).toMatch(/^TypeError/);
    expect(thrownBy(() => decodeRequest(OffsetFetchApi, 1, hex('00 01 67 | ff ff ff ff')))).toBe('MalformedMessageError');
  });
});

describe('OffsetFetch golden bytes', () => {
  it('v1 request, and v2 for all topics', () => {
    const v1 = hex(`
      00 01 67                    # GroupId "g"
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 02                 #   PartitionIndexes: 2
      00 00 00 00 | 00 00 00 01   #     0, 1
    `);
    const v2 = hex('00 01 67 | ff ff ff ff'); // GroupId "g", Topics null
    const request: OffsetFetchRequest = { groupId: 'g', topics: [{ name: 't', partitionIndexes: [0, 1] }] };
    expect(encodeRequest(OffsetFetchApi, 1, request)).toStrictEqual(v1);
    expect(decodeRequest(OffsetFetchApi, 1, v1)).toStrictEqual(request);
    expect(encodeRequest(OffsetFetchApi, 2, { groupId: 'g', topics: null })).toStrictEqual(v2);
    expect(decodeRequest(OffsetFetchApi, 2, v2)).toStrictEqual({ groupId: 'g', topics: null });
  });

  it('v1 response: no throttle, no leader epoch (−1), no top-level ErrorCode (0)', () => {
    const bytes = hex(`
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 00                 #     PartitionIndex 0
      00 00 00 00 00 00 00 2a     #     CommittedOffset 42
      00 00                       #     Metadata ""
      00 00                       #     ErrorCode 0
    `);
    const response: OffsetFetchResponse = { throttleTimeMs: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: -1, metadata: '', errorCode: 0 }] }], errorCode: 0 };
    expect(encodeResponse(OffsetFetchApi, 1, { ...response, throttleTimeMs: 3, errorCode: 16 })).toStrictEqual(bytes);
    expect(decodeResponse(OffsetFetchApi, 1, bytes)).toStrictEqual(response);
  });

  it('v5 response: the top-level ErrorCode comes after Topics', () => {
    const bytes = hex(`
      00 00 00 00                 # ThrottleTimeMs 0
      00 00 00 01 | 00 01 74      # Topics: 1, Name "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 00                 #     PartitionIndex 0
      00 00 00 00 00 00 00 2a     #     CommittedOffset 42
      00 00 00 05                 #     CommittedLeaderEpoch 5
      00 01 78                    #     Metadata "x"
      00 00                       #     ErrorCode 0
      00 00                       # ErrorCode 0
    `);
    const response: OffsetFetchResponse = { throttleTimeMs: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 5, metadata: 'x', errorCode: 0 }] }], errorCode: 0 };
    expect(encodeResponse(OffsetFetchApi, 5, response)).toStrictEqual(bytes);
    expect(decodeResponse(OffsetFetchApi, 5, bytes)).toStrictEqual(response);
  });

  it('v3 group-level error: no topics, ErrorCode 16 NOT_COORDINATOR', () => {
    const bytes = hex('00 00 00 00 | 00 00 00 00 | 00 10'); // ThrottleTimeMs 0, Topics [], ErrorCode 16
    const response: OffsetFetchResponse = { throttleTimeMs: 0, topics: [], errorCode: 16 };
    expect(encodeResponse(OffsetFetchApi, 3, response)).toStrictEqual(bytes);
    expect(decodeResponse(OffsetFetchApi, 3, bytes)).toStrictEqual(response);
  });
});

truncationTests(OffsetFetchApi, FETCH_REQUEST, FETCH_RESPONSE);
