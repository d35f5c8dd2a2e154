/** DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44): round trips per served version and golden bytes. */
import { describe, expect, it } from 'vitest';
import { AlterConfigsApi, type AlterConfigsRequest, type AlterConfigsResponse } from '../../../../src/protocol/apis/alter-configs.js';
import {
  CONFIG_SOURCE,
  CONFIG_TYPE,
  DescribeConfigsApi,
  type DescribeConfigsRequest,
  type DescribeConfigsResponse,
} from '../../../../src/protocol/apis/describe-configs.js';
import { CONFIG_OPERATION, IncrementalAlterConfigsApi, type IncrementalAlterConfigsRequest } from '../../../../src/protocol/apis/incremental-alter-configs.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, versionsOf } from './helpers.js';

const DESCRIBE_REQUEST: DescribeConfigsRequest = {
  resources: [
    { resourceType: 2, resourceName: 'orders', configurationKeys: ['retention.ms', 'segment.bytes'] },
    { resourceType: 4, resourceName: '1', configurationKeys: null },
  ],
  includeSynonyms: true,
  includeDocumentation: true,
};

const DESCRIBE_RESPONSE: DescribeConfigsResponse = {
  throttleTimeMs: 3,
  results: [
    {
      errorCode: 0,
      errorMessage: null,
      resourceType: 2,
      resourceName: 'orders',
      configs: [
        {
          name: 'retention.ms',
          value: '3600000',
          readOnly: false,
          configSource: CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG,
          isSensitive: false,
          synonyms: [
            { name: 'retention.ms', value: '3600000', source: CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG },
            { name: 'log.retention.ms', value: null, source: CONFIG_SOURCE.DEFAULT_CONFIG },
          ],
          configType: CONFIG_TYPE.LONG,
          documentation: 'Delete closed segments older than this.',
        },
      ],
    },
    { errorCode: 3, errorMessage: 'topic gone does not exist', resourceType: 2, resourceName: 'gone', configs: [] },
  ],
};

describe('DescribeConfigs schema', () => {
  it('serves v1–v3 under api key 32', () => {
    expect(DescribeConfigsApi.apiKey).toBe(32);
    expect(versionsOf(DescribeConfigsApi)).toEqual([1, 2, 3]);
  });

  for (const v of versionsOf(DescribeConfigsApi)) {
    it(`round-trips a v${v} request and response (documentation and types only from v3)`, () => {
      expect(roundTripRequest(DescribeConfigsApi, v, DESCRIBE_REQUEST)).toStrictEqual({ ...DESCRIBE_REQUEST, includeDocumentation: v >= 3 });
      const configs = (DESCRIBE_RESPONSE.results[0]?.configs ?? []).map((entry) => ({ ...entry, configType: v >= 3 ? entry.configType : 0, documentation: v >= 3 ? entry.documentation : null }));
      const expected = { ...DESCRIBE_RESPONSE, results: DESCRIBE_RESPONSE.results.map((result, i) => (i === 0 ? { ...result, configs } : result)) };
      expect(roundTripResponse(DescribeConfigsApi, v, DESCRIBE_RESPONSE)).toStrictEqual(expected);
    });
  }

  it('v3 request golden bytes', () => {
    const bytes = hex(`
      00 00 00 01                       # Resources: 1
      02 | 00 01 74                     #   ResourceType 2 (topic), ResourceName "t"
      00 00 00 01 | 00 02 72 6d         #   ConfigurationKeys: ["rm"]
      01                                # IncludeSynonyms
      00                                # IncludeDocumentation
    `);
    const request: DescribeConfigsRequest = { resources: [{ resourceType: 2, resourceName: 't', configurationKeys: ['rm'] }], includeSynonyms: true, includeDocumentation: false };
    expect(encodeRequest(DescribeConfigsApi, 3, request)).toStrictEqual(bytes);
    expect(decodeRequest(DescribeConfigsApi, 3, bytes)).toStrictEqual(request);
  });

  it('a null ConfigurationKeys (every config) is int32 -1', () => {
    const bytes = hex(`00 00 00 01 | 04 | 00 01 31 | ff ff ff ff | 00`);
    expect(decodeRequest(DescribeConfigsApi, 1, bytes)).toStrictEqual({ resources: [{ resourceType: 4, resourceName: '1', configurationKeys: null }], includeSynonyms: false, includeDocumentation: false });
  });

  it('v3 response golden bytes', () => {
    const response: DescribeConfigsResponse = {
      throttleTimeMs: 0,
      results: [
        {
          errorCode: 0,
          errorMessage: null,
          resourceType: 2,
          resourceName: 't',
          configs: [
            {
              name: 'a',
              value: '1',
              readOnly: false,
              configSource: CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG,
              isSensitive: false,
              synonyms: [{ name: 'a', value: '1', source: CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG }],
              configType: CONFIG_TYPE.INT,
              documentation: null,
            },
          ],
        },
      ],
    };
    const bytes = hex(`
      00 00 00 00                       # ThrottleTimeMs
      00 00 00 01                       # Results: 1
      00 00 | ff ff                     #   ErrorCode 0, ErrorMessage null
      02 | 00 01 74                     #   ResourceType 2, ResourceName "t"
      00 00 00 01                       #   Configs: 1
      00 01 61 | 00 01 31               #     Name "a", Value "1"
      00                                #     ReadOnly
      01                                #     ConfigSource 1 (DYNAMIC_TOPIC_CONFIG)
      00                                #     IsSensitive
      00 00 00 01 | 00 01 61 | 00 01 31 | 01   # Synonyms: [{ "a", "1", 1 }]
      03                                #     ConfigType 3 (INT)
      ff ff                             #     Documentation null
    `);
    expect(encodeResponse(DescribeConfigsApi, 3, response)).toStrictEqual(bytes);
    expect(decodeResponse(DescribeConfigsApi, 3, bytes)).toStrictEqual(response);
  });
});

const ALTER_REQUEST: AlterConfigsRequest = {
  resources: [{ resourceType: 2, resourceName: 'orders', configs: [{ name: 'retention.ms', value: '1000' }, { name: 'flush.ms', value: null }] }],
  validateOnly: true,
};

const ALTER_RESPONSE: AlterConfigsResponse = {
  throttleTimeMs: 9,
  responses: [
    { errorCode: 0, errorMessage: null, resourceType: 2, resourceName: 'orders' },
    { errorCode: 40, errorMessage: 'unknown topic config x', resourceType: 2, resourceName: 'clicks' },
  ],
};

describe('AlterConfigs schema', () => {
  it('serves v0–v1 under api key 33', () => {
    expect(AlterConfigsApi.apiKey).toBe(33);
    expect(versionsOf(AlterConfigsApi)).toEqual([0, 1]);
  });

  for (const v of versionsOf(AlterConfigsApi)) {
    it(`round-trips a v${v} request and response`, () => {
      expect(roundTripRequest(AlterConfigsApi, v, ALTER_REQUEST)).toStrictEqual(ALTER_REQUEST);
      expect(roundTripResponse(AlterConfigsApi, v, ALTER_RESPONSE)).toStrictEqual(ALTER_RESPONSE);
    });
  }

  it('v1 request golden bytes', () => {
    const bytes = hex(`
      00 00 00 01                       # Resources: 1
      02 | 00 01 74                     #   topic "t"
      00 00 00 01 | 00 01 61 | ff ff    #   Configs: [{ "a", null }]
      00                                # ValidateOnly
    `);
    const request: AlterConfigsRequest = { resources: [{ resourceType: 2, resourceName: 't', configs: [{ name: 'a', value: null }] }], validateOnly: false };
    expect(encodeRequest(AlterConfigsApi, 1, request)).toStrictEqual(bytes);
    expect(decodeRequest(AlterConfigsApi, 1, bytes)).toStrictEqual(request);
  });
});

describe('IncrementalAlterConfigs schema', () => {
  it('serves v0 under api key 44', () => {
    expect(IncrementalAlterConfigsApi.apiKey).toBe(44);
    expect(versionsOf(IncrementalAlterConfigsApi)).toEqual([0]);
  });

  it('round-trips a v0 request and response', () => {
    const request: IncrementalAlterConfigsRequest = {
      resources: [
        {
          resourceType: 2,
          resourceName: 'orders',
          configs: [
            { name: 'retention.ms', configOperation: CONFIG_OPERATION.SET, value: '1000' },
            { name: 'segment.ms', configOperation: CONFIG_OPERATION.DELETE, value: null },
            { name: 'cleanup.policy', configOperation: CONFIG_OPERATION.APPEND, value: 'delete' },
          ],
        },
      ],
      validateOnly: false,
    };
    expect(roundTripRequest(IncrementalAlterConfigsApi, 0, request)).toStrictEqual(request);
    expect(roundTripResponse(IncrementalAlterConfigsApi, 0, ALTER_RESPONSE)).toStrictEqual(ALTER_RESPONSE);
  });

  it('v0 request golden bytes', () => {
    const bytes = hex(`
      00 00 00 01                         # Resources: 1
      02 | 00 01 74                       #   topic "t"
      00 00 00 01 | 00 01 61 | 01 | ff ff #   Configs: [{ "a", DELETE, null }]
      01                                  # ValidateOnly
    `);
    const request: IncrementalAlterConfigsRequest = { resources: [{ resourceType: 2, resourceName: 't', configs: [{ name: 'a', configOperation: 1, value: null }] }], validateOnly: true };
    expect(encodeRequest(IncrementalAlterConfigsApi, 0, request)).toStrictEqual(bytes);
    expect(decodeRequest(IncrementalAlterConfigsApi, 0, bytes)).toStrictEqual(request);
  });

  it('v0 response golden bytes (the AlterConfigs layout)', () => {
    const bytes = hex(`
      00 00 00 00                       # ThrottleTimeMs
      00 00 00 01                       # Responses: 1
      00 28 | 00 01 78                  #   ErrorCode 40 (INVALID_CONFIG), ErrorMessage "x"
      02 | 00 01 74                     #   topic "t"
    `);
    const response = { throttleTimeMs: 0, responses: [{ errorCode: 40, errorMessage: 'x', resourceType: 2, resourceName: 't' }] };
    expect(encodeResponse(IncrementalAlterConfigsApi, 0, response)).toStrictEqual(bytes);
    expect(decodeResponse(IncrementalAlterConfigsApi, 0, bytes)).toStrictEqual(response);
  });
});
