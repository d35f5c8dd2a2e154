import { describe, expect, it } from 'vitest';
import { FetchApi, type FetchRequest, type FetchResponse } from '../../../../src/protocol/apis/fetch.js';
import { encodeResponseBody } from '../../../../src/protocol/schema.js';
import { isExternalPart, type ExternalPart } from '../../../../src/protocol/wire.js';
import { KCAT_BATCH, decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, newWriter, roundTripRequest, roundTripResponse, thrownBy, versionsOf } from './helpers.js';

const REQUEST: FetchRequest = {
  replicaId: -1,
  maxWaitMs: 500,
  minBytes: 1,
  maxBytes: 52_428_800,
  isolationLevel: 1,
  sessionId: 77,
  sessionEpoch: 3,
  topics: [
    {
      topic: 'orders',
      partitions: [
        { partition: 0, currentLeaderEpoch: 4, fetchOffset: 5_000_000_000n, logStartOffset: 100n, partitionMaxBytes: 1_048_576 },
        { partition: 2, currentLeaderEpoch: 4, fetchOffset: 0n, logStartOffset: 0n, partitionMaxBytes: 65_536 },
      ],
    },
  ],
  forgottenTopicsData: [{ topic: 'clicks', partitions: [1, 5] }],
  rackId: 'eu-west-1a',
};

function expectedRequest(v: number): FetchRequest {
  return {
    replicaId: -1,
    maxWaitMs: 500,
    minBytes: 1,
    maxBytes: 52_428_800,
    isolationLevel: 1,
    sessionId: v >= 7 ? 77 : 0,
    sessionEpoch: v >= 7 ? 3 : -1,
    topics: REQUEST.topics.map((t) => ({
      topic: t.topic,
      partitions: t.partitions.map((p) => ({
        partition: p.partition,
        currentLeaderEpoch: v >= 9 ? p.currentLeaderEpoch : -1,
        fetchOffset: p.fetchOffset,
        logStartOffset: v >= 5 ? p.logStartOffset : -1n,
        partitionMaxBytes: p.partitionMaxBytes,
      })),
    })),
    forgottenTopicsData: v >= 7 ? REQUEST.forgottenTopicsData : [],
    rackId: v >= 11 ? 'eu-west-1a' : '',
  };
}

const RESPONSE: FetchResponse = {
  throttleTimeMs: 10,
  errorCode: 0,
  sessionId: 0,
  responses: [
    {
      topic: 'orders',
      partitions: [
        {
          partitionIndex: 0,
          errorCode: 0,
          highWatermark: 5_000_000_001n,
          lastStableOffset: 5_000_000_000n,
          logStartOffset: 100n,
          abortedTransactions: [{ producerId: 9_000n, firstOffset: 4_999_999_990n }],
          preferredReadReplica: 2,
          records: KCAT_BATCH,
        },
        {
          partitionIndex: 2,
          errorCode: 1,
          highWatermark: 10n,
          lastStableOffset: 10n,
          logStartOffset: 0n,
          abortedTransactions: null,
          preferredReadReplica: -1,
          records: Buffer.alloc(0),
        },
      ],
    },
    {
      topic: 'missing',
      partitions: [
        { partitionIndex: 0, errorCode: 3, highWatermark: -1n, lastStableOffset: -1n, logStartOffset: -1n, abortedTransactions: [], preferredReadReplica: -1, records: null },
      ],
    },
  ],
};

function expectedResponse(v: number): FetchResponse {
  return {
    throttleTimeMs: 10,
    errorCode: 0,
    sessionId: 0,
    responses: RESPONSE.responses.map((t) => ({
      topic: t.topic,
      partitions: t.partitions.map((p) => ({
        ...p,
        logStartOffset: v >= 5 ? p.logStartOffset : -1n,
        preferredReadReplica: v >= 11 ? p.preferredReadReplica : -1,
      })),
    })),
  };
}

describe('Fetch schema', () => {
  it('serves v4–v11 under api key 1', () => {
    expect(FetchApi.apiKey).toBe(1);
    expect(versionsOf(FetchApi)).toEqual([4, 5, 6, 7, 8, 9, 10, 11]);
  });

  for (const v of versionsOf(FetchApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(FetchApi, v, REQUEST)).toStrictEqual(expectedRequest(v));
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(FetchApi, v, RESPONSE)).toStrictEqual(expectedResponse(v));
    });
  }

  it('v7+ carry the top-level ErrorCode and SessionId', () => {
    const response: FetchResponse = { ...RESPONSE, errorCode: 70, sessionId: 123 };
    expect(roundTripResponse(FetchApi, 7, response)).toMatchObject({ errorCode: 70, sessionId: 123 });
    expect(roundTripResponse(FetchApi, 6, response)).toMatchObject({ errorCode: 0, sessionId: 0 });
  });

  it('encodes Records given as an ExternalPart as a length and a hole the network layer fills', () => {
    const part: ExternalPart = { kind: 'external', length: KCAT_BATCH.length, source: { file: '00000000000000000000.log', position: 0 } };
    const response: FetchResponse = {
      throttleTimeMs: 0,
      errorCode: 0,
      sessionId: 0,
      responses: [
        {
          topic: 't',
          partitions: [{ partitionIndex: 0, errorCode: 0, highWatermark: 1n, lastStableOffset: 1n, logStartOffset: 0n, abortedTransactions: null, preferredReadReplica: -1, records: part }],
        },
      ],
    };
    const writer = newWriter();
    encodeResponseBody(FetchApi, 11, response, writer);
    const total = writer.length;
    const parts = writer.finish();
    expect(parts).toHaveLength(2);
    const [head, external] = parts;
    expect(external).toBe(part);
    if (head === undefined || isExternalPart(head)) throw new Error('expected a buffer first');
    expect(head.subarray(head.length - 4)).toStrictEqual(hex('00 00 00 53'));
    expect(total).toBe(head.length + KCAT_BATCH.length);
    // Filled in, the bytes decode as if the records had been inline.
    const decoded = decodeResponse(FetchApi, 11, Buffer.concat([head, KCAT_BATCH]));
    expect(decoded).toStrictEqual({ ...response, responses: [{ topic: 't', partitions: [{ ...response.responses[0]?.partitions[0], records: KCAT_BATCH }] }] });
  });
});

describe('Fetch golden bytes', () => {
  it('v4 request', () => {
    const bytes = hex(`
      ff ff ff ff                 # ReplicaId -1
      00 00 01 f4                 # MaxWaitMs 500
      00 00 00 01                 # MinBytes 1
      03 20 00 00                 # MaxBytes 52428800
      01                          # IsolationLevel 1 (read_committed)
      00 00 00 01                 # Topics: 1
      00 01 74                    #   Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02                 #     Partition 2
      00 00 00 00 00 00 00 05     #     FetchOffset 5
      00 10 00 00                 #     PartitionMaxBytes 1048576
    `);
    const request: FetchRequest = {
      replicaId: -1,
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 52_428_800,
      isolationLevel: 1,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [{ topic: 't', partitions: [{ partition: 2, currentLeaderEpoch: -1, fetchOffset: 5n, logStartOffset: -1n, partitionMaxBytes: 1_048_576 }] }],
      forgottenTopicsData: [],
      rackId: '',
    };
    expect(encodeRequest(FetchApi, 4, request)).toStrictEqual(bytes);
    expect(decodeRequest(FetchApi, 4, bytes)).toStrictEqual(request);
  });

  it('v11 request', () => {
    const bytes = hex(`
      ff ff ff ff | 00 00 01 f4 | 00 00 00 01 | 03 20 00 00 | 00   # ReplicaId, MaxWaitMs, MinBytes, MaxBytes, IsolationLevel 0
      00 00 00 00                 # SessionId 0
      ff ff ff ff                 # SessionEpoch -1
      00 00 00 01                 # Topics: 1
      00 01 74                    #   Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02                 #     Partition 2
      00 00 00 04                 #     CurrentLeaderEpoch 4
      00 00 00 00 00 00 00 05     #     FetchOffset 5
      ff ff ff ff ff ff ff ff     #     LogStartOffset -1
      00 10 00 00                 #     PartitionMaxBytes 1048576
      00 00 00 01                 # ForgottenTopicsData: 1
      00 01 75                    #   Topic "u"
      00 00 00 01 00 00 00 01     #   Partitions [1]
      00 01 72                    # RackId "r"
    `);
    const request: FetchRequest = {
      replicaId: -1,
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 52_428_800,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [{ topic: 't', partitions: [{ partition: 2, currentLeaderEpoch: 4, fetchOffset: 5n, logStartOffset: -1n, partitionMaxBytes: 1_048_576 }] }],
      forgottenTopicsData: [{ topic: 'u', partitions: [1] }],
      rackId: 'r',
    };
    expect(encodeRequest(FetchApi, 11, request)).toStrictEqual(bytes);
    expect(decodeRequest(FetchApi, 11, bytes)).toStrictEqual(request);
  });

  it('v4 response', () => {
    const bytes = hex(`
      00 00 00 00                 # ThrottleTimeMs 0
      00 00 00 01                 # Responses: 1
      00 01 74                    #   Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02 | 00 00         #     PartitionIndex 2, ErrorCode 0
      00 00 00 00 00 00 00 0a     #     HighWatermark 10
      00 00 00 00 00 00 00 09     #     LastStableOffset 9
      00 00 00 01                 #     AbortedTransactions: 1
      00 00 00 00 00 00 00 07 | 00 00 00 00 00 00 00 03   # ProducerId 7, FirstOffset 3
      00 00 00 02 | ab cd         #     Records: 2 bytes
    `);
    const response: FetchResponse = {
      throttleTimeMs: 0,
      errorCode: 0,
      sessionId: 0,
      responses: [
        {
          topic: 't',
          partitions: [
            {
              partitionIndex: 2,
              errorCode: 0,
              highWatermark: 10n,
              lastStableOffset: 9n,
              logStartOffset: -1n,
              abortedTransactions: [{ producerId: 7n, firstOffset: 3n }],
              preferredReadReplica: -1,
              records: hex('ab cd'),
            },
          ],
        },
      ],
    };
    expect(encodeResponse(FetchApi, 4, response)).toStrictEqual(bytes);
    expect(decodeResponse(FetchApi, 4, bytes)).toStrictEqual(response);
  });

  it('v11 response', () => {
    const bytes = hex(`
      00 00 00 05                 # ThrottleTimeMs 5
      00 00                       # ErrorCode 0
      00 00 00 00                 # SessionId 0
      00 00 00 01                 # Responses: 1
      00 01 74                    #   Topic "t"
      00 00 00 01                 #   Partitions: 1
      00 00 00 02 | 00 01         #     PartitionIndex 2, ErrorCode 1
      00 00 00 00 00 00 00 0a     #     HighWatermark 10
      00 00 00 00 00 00 00 09     #     LastStableOffset 9
      00 00 00 00 00 00 00 03     #     LogStartOffset 3
      ff ff ff ff                 #     AbortedTransactions null
      ff ff ff ff                 #     PreferredReadReplica -1
      00 00 00 00                 #     Records: 0 bytes
    `);
    const response: FetchResponse = {
      throttleTimeMs: 5,
      errorCode: 0,
      sessionId: 0,
      responses: [
        {
          topic: 't',
          partitions: [
            { partitionIndex: 2, errorCode: 1, highWatermark: 10n, lastStableOffset: 9n, logStartOffset: 3n, abortedTransactions: null, preferredReadReplica: -1, records: Buffer.alloc(0) },
          ],
        },
      ],
    };
    expect(encodeResponse(FetchApi, 11, response)).toStrictEqual(bytes);
    expect(decodeResponse(FetchApi, 11, bytes)).toStrictEqual(response);
  });
});

describe('Fetch truncated requests', () => {
  it('every prefix of a v11 request is a MalformedMessageError and nothing else', () => {
    const bytes = encodeRequest(FetchApi, 11, REQUEST);
    expect(thrownBy(() => decodeRequest(FetchApi, 11, bytes))).toBe('nothing');
    const outcomes = new Set<string>();
    for (let length = 0; length < bytes.length; length += 1) {
      outcomes.add(thrownBy(() => decodeRequest(FetchApi, 11, bytes.subarray(0, length))));
    }
    expect([...outcomes]).toEqual(['MalformedMessageError']);
  });

  it('a hostile partition count is a MalformedMessageError before any allocation', () => {
    const bytes = hex('ff ff ff ff | 00 00 01 f4 | 00 00 00 01 | 03 20 00 00 | 00 | 00 00 00 01 | 00 01 74 | 7f ff ff ff');
    expect(thrownBy(() => decodeRequest(FetchApi, 4, bytes))).toBe('MalformedMessageError');
  });
});
