import { describe, expect, it } from 'vitest';
import { ProduceApi, type ProduceRequest, type ProduceResponse } from '../../../../src/protocol/apis/produce.js';
import { KCAT_BATCH, decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, thrownBy, versionsOf } from './helpers.js';

const REQUEST: ProduceRequest = {
  transactionalId: 'payments-tx-1',
  acks: -1,
  timeoutMs: 30000,
  topicData: [
    {
      name: 'orders',
      partitionData: [
        { index: 0, records: KCAT_BATCH },
        { index: 3, records: null },
      ],
    },
    { name: 'clicks', partitionData: [{ index: 1, records: Buffer.alloc(0) }] },
  ],
};

function expectedRequest(v: number): ProduceRequest {
  return { ...REQUEST, transactionalId: v >= 3 ? 'payments-tx-1' : null };
}

const RESPONSE: ProduceResponse = {
  responses: [
    {
      name: 'orders',
      partitionResponses: [
        {
          index: 0,
          errorCode: 0,
          baseOffset: 4_294_967_296n,
          logAppendTimeMs: 1_700_000_000_000n,
          logStartOffset: 12n,
          recordErrors: [],
          errorMessage: null,
        },
        {
          index: 3,
          errorCode: 87,
          baseOffset: -1n,
          logAppendTimeMs: -1n,
          logStartOffset: 0n,
          recordErrors: [
            { batchIndex: 0, batchIndexErrorMessage: 'key required on compacted topic' },
            { batchIndex: 2, batchIndexErrorMessage: null },
          ],
          errorMessage: 'batch rejected',
        },
      ],
    },
  ],
  throttleTimeMs: 25,
};

function expectedResponse(v: number): ProduceResponse {
  return {
    responses: RESPONSE.responses.map((t) => ({
      name: t.name,
      partitionResponses: t.partitionResponses.map((p) => ({
        index: p.index,
        errorCode: p.errorCode,
        baseOffset: p.baseOffset,
        logAppendTimeMs: v >= 2 ? p.logAppendTimeMs : -1n,
        logStartOffset: v >= 5 ? p.logStartOffset : -1n,
        recordErrors: v >= 8 ? p.recordErrors : [],
        errorMessage: v >= 8 ? p.errorMessage : null,
      })),
    })),
    throttleTimeMs: v >= 1 ? 25 : 0,
  };
}

describe('Produce schema', () => {
  it('serves v0–v8 under api key 0', () => {
    expect(ProduceApi.apiKey).toBe(0);
    expect(versionsOf(ProduceApi)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  for (const v of versionsOf(ProduceApi)) {
    it(`round-trips a v${v} request`, () => {
      const decoded = roundTripRequest(ProduceApi, v, REQUEST);
      expect(decoded).toStrictEqual(expectedRequest(v));
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(ProduceApi, v, RESPONSE)).toStrictEqual(expectedResponse(v));
    });
  }

  it('decodes Records as a view of the request bytes (no copy)', () => {
    const bytes = encodeRequest(ProduceApi, 7, REQUEST);
    const records = decodeRequest(ProduceApi, 7, bytes).topicData[0]?.partitionData[0]?.records;
    expect(records).toStrictEqual(KCAT_BATCH);
    bytes.fill(0xee);
    expect(records?.every((b) => b === 0xee)).toBe(true);
  });

  it('keeps a null TransactionalId null from v3 on', () => {
    expect(roundTripRequest(ProduceApi, 3, { ...REQUEST, transactionalId: null }).transactionalId).toBeNull();
  });
});

describe('Produce golden bytes', () => {
  it('v3 request with one partition', () => {
    const bytes = Buffer.concat([
      hex(`
        ff ff                     # TransactionalId null
        00 01                     # Acks 1
        00 00 75 30               # TimeoutMs 30000
        00 00 00 01               # TopicData: 1
        00 01 74                  #   Name "t"
        00 00 00 01               #   PartitionData: 1
        00 00 00 02               #     Index 2
        00 00 00 53               #     Records: 83 bytes
      `),
      KCAT_BATCH,
    ]);
    const request: ProduceRequest = { transactionalId: null, acks: 1, timeoutMs: 30000, topicData: [{ name: 't', partitionData: [{ index: 2, records: KCAT_BATCH }] }] };
    expect(encodeRequest(ProduceApi, 3, request)).toStrictEqual(bytes);
    expect(decodeRequest(ProduceApi, 3, bytes)).toStrictEqual(request);
  });

  it('v2 request has no TransactionalId', () => {
    const bytes = hex('ff ff | 00 00 03 e8 | 00 00 00 01 | 00 01 74 | 00 00 00 01 | 00 00 00 00 | 00 00 00 02 | ab cd');
    const request: ProduceRequest = { transactionalId: null, acks: -1, timeoutMs: 1000, topicData: [{ name: 't', partitionData: [{ index: 0, records: hex('ab cd') }] }] };
    expect(encodeRequest(ProduceApi, 2, request)).toStrictEqual(bytes);
    expect(decodeRequest(ProduceApi, 2, bytes)).toStrictEqual(request);
  });

  it('v1 response: ThrottleTimeMs comes after Responses', () => {
    const bytes = hex(`
      00 00 00 01                 # Responses: 1
      00 01 74                    #   Name "t"
      00 00 00 01                 #   PartitionResponses: 1
      00 00 00 03 | 00 00 | 00 00 00 00 00 00 00 2a   # Index 3, ErrorCode 0, BaseOffset 42
      00 00 00 64                 # ThrottleTimeMs 100
    `);
    const response = decodeResponse(ProduceApi, 1, bytes);
    expect(response).toStrictEqual({
      responses: [{ name: 't', partitionResponses: [{ index: 3, errorCode: 0, baseOffset: 42n, logAppendTimeMs: -1n, logStartOffset: -1n, recordErrors: [], errorMessage: null }] }],
      throttleTimeMs: 100,
    });
    expect(encodeResponse(ProduceApi, 1, response)).toStrictEqual(bytes);
  });

  it('v8 response', () => {
    const bytes = hex(`
      00 00 00 01                 # Responses: 1
      00 01 74                    #   Name "t"
      00 00 00 01                 #   PartitionResponses: 1
      00 00 00 03                 #     Index 3
      00 57                       #     ErrorCode 87
      ff ff ff ff ff ff ff ff     #     BaseOffset -1
      00 00 00 00 00 00 00 2a     #     LogAppendTimeMs 42
      00 00 00 00 00 00 00 07     #     LogStartOffset 7
      00 00 00 01                 #     RecordErrors: 1
      00 00 00 01 | 00 01 78      #       BatchIndex 1, BatchIndexErrorMessage "x"
      ff ff                       #     ErrorMessage null
      00 00 00 64                 # ThrottleTimeMs 100
    `);
    const response: ProduceResponse = {
      responses: [
        {
          name: 't',
          partitionResponses: [
            { index: 3, errorCode: 87, baseOffset: -1n, logAppendTimeMs: 42n, logStartOffset: 7n, recordErrors: [{ batchIndex: 1, batchIndexErrorMessage: 'x' }], errorMessage: null },
          ],
        },
      ],
      throttleTimeMs: 100,
    };
    expect(encodeResponse(ProduceApi, 8, response)).toStrictEqual(bytes);
    expect(decodeResponse(ProduceApi, 8, bytes)).toStrictEqual(response);
  });
});

describe('Produce truncated requests', () => {
  it('every prefix of a v8 request is a MalformedMessageError and nothing else', () => {
    const bytes = encodeRequest(ProduceApi, 8, REQUEST);
    expect(thrownBy(() => decodeRequest(ProduceApi, 8, bytes))).toBe('nothing');
    const outcomes = new Set<string>();
    for (let length = 0; length < bytes.length; length += 1) {
      outcomes.add(thrownBy(() => decodeRequest(ProduceApi, 8, bytes.subarray(0, length))));
    }
    expect([...outcomes]).toEqual(['MalformedMessageError']);
  });

  it('trailing bytes after a v8 request are a MalformedMessageError', () => {
    const bytes = Buffer.concat([encodeRequest(ProduceApi, 8, REQUEST), hex('00')]);
    expect(thrownBy(() => decodeRequest(ProduceApi, 8, bytes))).toBe('MalformedMessageError');
  });
});
