import { describe, expect, it } from 'vitest';
import { ApiVersionsApi, SUPPORTED_API_VERSIONS, type ApiVersionsResponse } from '../../../../src/protocol/apis/index.js';
import { encodeResponseHeader } from '../../../../src/protocol/headers.js';
import { encodeResponseBody } from '../../../../src/protocol/schema.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, newWriter, roundTripResponse, versionsOf } from './helpers.js';

describe('ApiVersions schema', () => {
  for (const v of versionsOf(ApiVersionsApi)) {
    it(`round-trips a v${v} request (empty body)`, () => {
      const bytes = encodeRequest(ApiVersionsApi, v, {});
      expect(bytes.length).toBe(0);
      expect(decodeRequest(ApiVersionsApi, v, bytes)).toStrictEqual({});
    });

    it(`round-trips a v${v} response built from SUPPORTED_API_VERSIONS`, () => {
      const response: ApiVersionsResponse = { errorCode: 0, apiKeys: SUPPORTED_API_VERSIONS, throttleTimeMs: 12 };
      expect(roundTripResponse(ApiVersionsApi, v, response)).toStrictEqual({
        errorCode: 0,
        apiKeys: SUPPORTED_API_VERSIONS.map((r) => ({ ...r })),
        throttleTimeMs: v >= 1 ? 12 : 0,
      });
    });
  }
});

describe('ApiVersions golden bytes', () => {
  it('the unsupported-version fallback frame of §2.1', () => {
    const correlationId = 0x0a0b0c0d;
    const writer = newWriter();
    encodeResponseHeader(writer, correlationId);
    encodeResponseBody(ApiVersionsApi, 0, { errorCode: 35, apiKeys: [{ apiKey: 18, minVersion: 0, maxVersion: 2 }], throttleTimeMs: 0 }, writer);
    const body = writer.toBuffer();
    const size = Buffer.alloc(4);
    size.writeInt32BE(body.length);
    expect(Buffer.concat([size, body])).toStrictEqual(hex('00 00 00 10 | 0a 0b 0c 0d | 00 23 | 00 00 00 01 | 00 12 00 00 00 02'));
  });

  it('the v2 response advertising SUPPORTED_API_VERSIONS', () => {
    const bytes = hex(`
      00 00                       # ErrorCode 0
      00 00 00 1d                 # ApiKeys: 29
      00 00 00 00 00 08           #   Produce 0–8
      00 01 00 04 00 0b           #   Fetch 4–11
      00 02 00 01 00 05           #   ListOffsets 1–5
      00 03 00 00 00 09           #   Metadata 0–9 (v9 flexible)
      00 08 00 02 00 07           #   OffsetCommit 2–7
      00 09 00 01 00 05           #   OffsetFetch 1–5
      00 0a 00 00 00 02           #   FindCoordinator 0–2
      00 0b 00 00 00 05           #   JoinGroup 0–5
      00 0c 00 00 00 03           #   Heartbeat 0–3
      00 0d 00 00 00 03           #   LeaveGroup 0–3
      00 0e 00 00 00 03           #   SyncGroup 0–3
      00 0f 00 00 00 04           #   DescribeGroups 0–4
      00 10 00 00 00 02           #   ListGroups 0–2
      00 11 00 00 00 01           #   SaslHandshake 0–1
      00 12 00 00 00 02           #   ApiVersions 0–2
      00 13 00 00 00 04           #   CreateTopics 0–4
      00 14 00 00 00 03           #   DeleteTopics 0–3
      00 15 00 00 00 01           #   DeleteRecords 0–1
      00 16 00 00 00 01           #   InitProducerId 0–1
      00 17 00 00 00 03           #   OffsetForLeaderEpoch 0–3
      00 1d 00 00 00 01           #   DescribeAcls 0–1
      00 1e 00 00 00 01           #   CreateAcls 0–1
      00 1f 00 00 00 01           #   DeleteAcls 0–1
      00 20 00 01 00 03           #   DescribeConfigs 1–3
      00 21 00 00 00 01           #   AlterConfigs 0–1
      00 24 00 00 00 01           #   SaslAuthenticate 0–1
      00 25 00 00 00 01           #   CreatePartitions 0–1
      00 2a 00 00 00 01           #   DeleteGroups 0–1
      00 2c 00 00 00 00           #   IncrementalAlterConfigs 0
      00 00 00 00                 # ThrottleTimeMs 0
    `);
    const response: ApiVersionsResponse = { errorCode: 0, apiKeys: SUPPORTED_API_VERSIONS, throttleTimeMs: 0 };
    expect(encodeResponse(ApiVersionsApi, 2, response)).toStrictEqual(bytes);
    expect(decodeResponse(ApiVersionsApi, 2, bytes)).toStrictEqual({ ...response, apiKeys: SUPPORTED_API_VERSIONS.map((r) => ({ ...r })) });
  });
});
