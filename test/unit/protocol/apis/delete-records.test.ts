/**
 * DeleteRecords (key 21) v0–1. The golden bytes are what Kafka 3.9.1's own generated message
 * classes write (DeleteRecordsRequestData / DeleteRecordsResponseData through
 * MessageUtil.toByteBuffer) for the same values.
 */
import { describe, expect, it } from 'vitest';
import { DeleteRecordsApi, type DeleteRecordsRequest, type DeleteRecordsResponse } from '../../../../src/protocol/apis/delete-records.js';
import { isFlexibleVersion } from '../../../../src/protocol/schema.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, truncationTests, versionsOf } from './helpers.js';

const REQUEST: DeleteRecordsRequest = {
  topics: [
    {
      name: 't',
      partitions: [
        { partitionIndex: 0, offset: 5n },
        { partitionIndex: 2, offset: -1n },
      ],
    },
  ],
  timeoutMs: 30000,
};

const RESPONSE: DeleteRecordsResponse = {
  throttleTimeMs: 7,
  topics: [
    {
      name: 't',
      partitions: [
        { partitionIndex: 0, lowWatermark: 5n, errorCode: 0 },
        { partitionIndex: 2, lowWatermark: -1n, errorCode: 1 },
      ],
    },
  ],
};

const REQUEST_BYTES = hex(`
  00000001                       # Topics: 1
  0001 74                        #   Name "t"
  00000002                       #   Partitions: 2
  00000000 0000000000000005      #     0, offset 5
  00000002 ffffffffffffffff      #     2, offset -1 (the high watermark)
  00007530                       # TimeoutMs 30000
`);

const RESPONSE_BYTES = hex(`
  00000007                                 # ThrottleTimeMs 7
  00000001                                 # Topics: 1
  0001 74                                  #   Name "t"
  00000002                                 #   Partitions: 2
  00000000 0000000000000005 0000           #     0, low watermark 5, NONE
  00000002 ffffffffffffffff 0001           #     2, -1, OFFSET_OUT_OF_RANGE
`);

describe('DeleteRecords schema', () => {
  it('serves v0–v1 under api key 21, neither flexible', () => {
    expect(DeleteRecordsApi.apiKey).toBe(21);
    expect(versionsOf(DeleteRecordsApi)).toEqual([0, 1]);
    expect(versionsOf(DeleteRecordsApi).filter((v) => isFlexibleVersion(DeleteRecordsApi, v))).toEqual([]);
  });

  for (const v of versionsOf(DeleteRecordsApi)) {
    it(`v${v}: golden request and response bytes (Kafka 3.9.1's), both ways`, () => {
      expect(encodeRequest(DeleteRecordsApi, v, REQUEST)).toStrictEqual(REQUEST_BYTES);
      expect(decodeRequest(DeleteRecordsApi, v, REQUEST_BYTES)).toStrictEqual(REQUEST);
      expect(encodeResponse(DeleteRecordsApi, v, RESPONSE)).toStrictEqual(RESPONSE_BYTES);
      expect(decodeResponse(DeleteRecordsApi, v, RESPONSE_BYTES)).toStrictEqual(RESPONSE);
    });

    it(`v${v}: round-trips offsets at the int64 extremes and an empty request`, () => {
      const extremes: DeleteRecordsRequest = { topics: [{ name: 'orders', partitions: [{ partitionIndex: 2147483647, offset: 9223372036854775807n }, { partitionIndex: 0, offset: -9223372036854775808n }] }], timeoutMs: 0 };
      expect(roundTripRequest(DeleteRecordsApi, v, extremes)).toStrictEqual(extremes);
      expect(roundTripRequest(DeleteRecordsApi, v, { topics: [], timeoutMs: -1 })).toStrictEqual({ topics: [], timeoutMs: -1 });
      expect(roundTripResponse(DeleteRecordsApi, v, { throttleTimeMs: 0, topics: [] })).toStrictEqual({ throttleTimeMs: 0, topics: [] });
    });
  }
});

truncationTests(DeleteRecordsApi, REQUEST, RESPONSE);
