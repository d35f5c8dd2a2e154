import { describe, expect, it } from 'vitest';
import { CreateTopicsApi, type CreateTopicsRequest, type CreateTopicsResponse } from '../../../../src/protocol/apis/create-topics.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, versionsOf } from './helpers.js';

const REQUEST: CreateTopicsRequest = {
  topics: [
    {
      name: 'orders',
      numPartitions: 6,
      replicationFactor: 2,
      assignments: [],
      configs: [
        { name: 'cleanup.policy', value: 'compact' },
        { name: 'retention.ms', value: null },
      ],
    },
    {
      name: 'placed',
      numPartitions: -1,
      replicationFactor: -1,
      assignments: [
        { partitionIndex: 0, brokerIds: [1, 2] },
        { partitionIndex: 1, brokerIds: [2, 3] },
      ],
      configs: [],
    },
  ],
  timeoutMs: 30000,
  validateOnly: true,
};

const RESPONSE: CreateTopicsResponse = {
  throttleTimeMs: 20,
  topics: [
    { name: 'orders', errorCode: 0, errorMessage: null },
    { name: 'placed', errorCode: 36, errorMessage: "Topic 'placed' already exists." },
  ],
};

describe('CreateTopics schema', () => {
  it('serves v0–v4 under api key 19', () => {
    expect(CreateTopicsApi.apiKey).toBe(19);
    expect(versionsOf(CreateTopicsApi)).toEqual([0, 1, 2, 3, 4]);
  });

  for (const v of versionsOf(CreateTopicsApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(CreateTopicsApi, v, REQUEST)).toStrictEqual({ ...REQUEST, validateOnly: v >= 1 });
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(CreateTopicsApi, v, RESPONSE)).toStrictEqual({
        throttleTimeMs: v >= 2 ? 20 : 0,
        topics: RESPONSE.topics.map((t) => ({ ...t, errorMessage: v >= 1 ? t.errorMessage : null })),
      });
    });
  }
});

describe('CreateTopics golden bytes', () => {
  const body = `
    00 00 00 01                   # Topics: 1
    00 01 74                      #   Name "t"
    ff ff ff ff                   #   NumPartitions -1
    ff ff                         #   ReplicationFactor -1
    00 00 00 01                   #   Assignments: 1
    00 00 00 00                   #     PartitionIndex 0
    00 00 00 01 00 00 00 01       #     BrokerIds [1]
    00 00 00 02                   #   Configs: 2
    00 01 6b | 00 01 76           #     "k" = "v"
    00 01 6e | ff ff              #     "n" = null
    00 00 ea 60                   # TimeoutMs 60000
  `;
  const request = (validateOnly: boolean): CreateTopicsRequest => ({
    topics: [
      {
        name: 't',
        numPartitions: -1,
        replicationFactor: -1,
        assignments: [{ partitionIndex: 0, brokerIds: [1] }],
        configs: [
          { name: 'k', value: 'v' },
          { name: 'n', value: null },
        ],
      },
    ],
    timeoutMs: 60000,
    validateOnly,
  });

  it('v0 request', () => {
    const bytes = hex(body);
    expect(encodeRequest(CreateTopicsApi, 0, request(true))).toStrictEqual(bytes);
    expect(decodeRequest(CreateTopicsApi, 0, bytes)).toStrictEqual(request(false));
  });

  it('v4 request ends with ValidateOnly', () => {
    const bytes = hex(`${body} 01  # ValidateOnly true`);
    expect(encodeRequest(CreateTopicsApi, 4, request(true))).toStrictEqual(bytes);
    expect(decodeRequest(CreateTopicsApi, 4, bytes)).toStrictEqual(request(true));
  });

  it('v0 and v4 responses', () => {
    const response: CreateTopicsResponse = { throttleTimeMs: 0, topics: [{ name: 't', errorCode: 36, errorMessage: 'exists' }] };
    const v0 = hex('00 00 00 01 | 00 01 74 | 00 24');
    const v4 = hex(`
      00 00 00 00                 # ThrottleTimeMs 0
      00 00 00 01                 # Topics: 1
      00 01 74 | 00 24            #   Name "t", ErrorCode 36
      00 06 65 78 69 73 74 73     #   ErrorMessage "exists"
    `);
    expect(encodeResponse(CreateTopicsApi, 0, response)).toStrictEqual(v0);
    expect(encodeResponse(CreateTopicsApi, 4, response)).toStrictEqual(v4);
    expect(decodeResponse(CreateTopicsApi, 4, v4)).toStrictEqual(response);
    expect(decodeResponse(CreateTopicsApi, 0, v0)).toStrictEqual({ ...response, topics: [{ name: 't', errorCode: 36, errorMessage: null }] });
  });
});
