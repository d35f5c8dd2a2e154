import { describe, expect, it } from 'vitest';
import { DeleteTopicsApi, type DeleteTopicsRequest, type DeleteTopicsResponse } from '../../../../src/protocol/apis/delete-topics.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, versionsOf } from './helpers.js';

const REQUEST: DeleteTopicsRequest = { topicNames: ['orders', 'clicks', 'old-events'], timeoutMs: 30000 };

const RESPONSE: DeleteTopicsResponse = {
  throttleTimeMs: 7,
  responses: [
    { name: 'orders', errorCode: 0 },
    { name: 'clicks', errorCode: 3 },
    { name: 'old-events', errorCode: 73 },
  ],
};

describe('DeleteTopics schema', () => {
  it('serves v0–v3 under api key 20', () => {
    expect(DeleteTopicsApi.apiKey).toBe(20);
    expect(versionsOf(DeleteTopicsApi)).toEqual([0, 1, 2, 3]);
  });

  for (const v of versionsOf(DeleteTopicsApi)) {
    it(`round-trips a v${v} request`, () => {
      expect(roundTripRequest(DeleteTopicsApi, v, REQUEST)).toStrictEqual(REQUEST);
    });

    it(`round-trips a v${v} response`, () => {
      expect(roundTripResponse(DeleteTopicsApi, v, RESPONSE)).toStrictEqual({ ...RESPONSE, throttleTimeMs: v >= 1 ? 7 : 0 });
    });
  }
});

describe('DeleteTopics golden bytes', () => {
  it('v3 request', () => {
    const bytes = hex(`
      00 00 00 02                 # TopicNames: 2
      00 01 74 | 00 01 75         #   "t", "u"
      00 00 75 30                 # TimeoutMs 30000
    `);
    const request: DeleteTopicsRequest = { topicNames: ['t', 'u'], timeoutMs: 30000 };
    expect(encodeRequest(DeleteTopicsApi, 3, request)).toStrictEqual(bytes);
    expect(decodeRequest(DeleteTopicsApi, 3, bytes)).toStrictEqual(request);
  });

  it('v0 and v3 responses', () => {
    const response: DeleteTopicsResponse = {
      throttleTimeMs: 5,
      responses: [
        { name: 't', errorCode: 0 },
        { name: 'u', errorCode: 3 },
      ],
    };
    const v0 = hex('00 00 00 02 | 00 01 74 | 00 00 | 00 01 75 | 00 03');
    const v3 = hex('00 00 00 05 | 00 00 00 02 | 00 01 74 | 00 00 | 00 01 75 | 00 03');
    expect(encodeResponse(DeleteTopicsApi, 0, response)).toStrictEqual(v0);
    expect(encodeResponse(DeleteTopicsApi, 3, response)).toStrictEqual(v3);
    expect(decodeResponse(DeleteTopicsApi, 3, v3)).toStrictEqual(response);
    expect(decodeResponse(DeleteTopicsApi, 0, v0)).toStrictEqual({ ...response, throttleTimeMs: 0 });
  });
});
