import { describe, expect, it } from 'vitest';
import { CreateAclsApi, type CreateAclsRequest, type CreateAclsResponse } from '../../../../src/protocol/apis/create-acls.js';
import { DeleteAclsApi, type DeleteAclsRequest, type DeleteAclsResponse } from '../../../../src/protocol/apis/delete-acls.js';
import { DescribeAclsApi, type DescribeAclsRequest, type DescribeAclsResponse } from '../../../../src/protocol/apis/describe-acls.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, hex, roundTripRequest, roundTripResponse, truncationTests, versionsOf } from './helpers.js';

const FILTER: DescribeAclsRequest = {
  resourceTypeFilter: 2,
  resourceNameFilter: 'orders',
  patternTypeFilter: 4,
  principalFilter: null,
  hostFilter: '*',
  operation: 3,
  permissionType: 3,
};

const DESCRIBED: DescribeAclsResponse = {
  throttleTimeMs: 3,
  errorCode: 0,
  errorMessage: null,
  resources: [
    {
      resourceType: 2,
      resourceName: 'ord',
      patternType: 4,
      acls: [
        { principal: 'User:alice', host: '*', operation: 3, permissionType: 3 },
        { principal: 'User:bob', host: '10.0.0.1', operation: 4, permissionType: 2 },
      ],
    },
  ],
};

const CREATE: CreateAclsRequest = {
  creations: [
    { resourceType: 2, resourceName: 'logs-', resourcePatternType: 4, principal: 'User:etl', host: '*', operation: 4, permissionType: 3 },
    { resourceType: 4, resourceName: 'kafka-cluster', resourcePatternType: 3, principal: 'User:ops', host: '*', operation: 7, permissionType: 3 },
  ],
};

const CREATED: CreateAclsResponse = { throttleTimeMs: 0, results: [{ errorCode: 0, errorMessage: null }, { errorCode: 42, errorMessage: 'bad' }] };

const DELETE: DeleteAclsRequest = { filters: [{ ...FILTER, patternTypeFilter: 1 }, { ...FILTER, resourceNameFilter: null, patternTypeFilter: 3 }] };

const DELETED: DeleteAclsResponse = {
  throttleTimeMs: 0,
  filterResults: [
    {
      errorCode: 0,
      errorMessage: null,
      matchingAcls: [{ errorCode: 0, errorMessage: null, resourceType: 2, resourceName: 'orders', patternType: 3, principal: 'User:alice', host: '*', operation: 3, permissionType: 3 }],
    },
    { errorCode: 42, errorMessage: 'unknown operation 99', matchingAcls: [] },
  ],
};

describe('ACL API schemas', () => {
  it('serve the non-flexible versions 0–1 under keys 29, 30, 31', () => {
    expect([DescribeAclsApi.apiKey, CreateAclsApi.apiKey, DeleteAclsApi.apiKey]).toEqual([29, 30, 31]);
    for (const api of [DescribeAclsApi, CreateAclsApi, DeleteAclsApi]) {
      expect(versionsOf(api)).toEqual([0, 1]);
      expect(api.flexibleVersions).toBeUndefined();
    }
  });

  it('round-trip v1 requests and responses whole', () => {
    expect(roundTripRequest(DescribeAclsApi, 1, FILTER)).toStrictEqual(FILTER);
    expect(roundTripResponse(DescribeAclsApi, 1, DESCRIBED)).toStrictEqual(DESCRIBED);
    expect(roundTripRequest(CreateAclsApi, 1, CREATE)).toStrictEqual(CREATE);
    expect(roundTripResponse(CreateAclsApi, 1, CREATED)).toStrictEqual(CREATED);
    expect(roundTripRequest(DeleteAclsApi, 1, DELETE)).toStrictEqual(DELETE);
    expect(roundTripResponse(DeleteAclsApi, 1, DELETED)).toStrictEqual(DELETED);
  });

  it('v0 has no pattern type: it reads back as LITERAL (3)', () => {
    expect(roundTripRequest(DescribeAclsApi, 0, FILTER)).toStrictEqual({ ...FILTER, patternTypeFilter: 3 });
    expect(roundTripRequest(CreateAclsApi, 0, CREATE).creations.map((creation) => creation.resourcePatternType)).toEqual([3, 3]);
    expect(roundTripRequest(DeleteAclsApi, 0, DELETE).filters.map((filter) => filter.patternTypeFilter)).toEqual([3, 3]);
    const literal = { ...DESCRIBED, resources: DESCRIBED.resources.map((resource) => ({ ...resource, patternType: 3 })) };
    expect(roundTripResponse(DescribeAclsApi, 0, literal)).toStrictEqual(literal);
    expect(encodeResponse(DescribeAclsApi, 0, DESCRIBED).length).toBe(encodeResponse(DescribeAclsApi, 1, DESCRIBED).length - 1);
  });
});

describe('ACL API golden bytes', () => {
  it('DescribeAcls v1 request: type, nullable name, pattern, principal, host, operation, permission', () => {
    const bytes = hex(`
      02                    # ResourceTypeFilter TOPIC
      00 01 6f              # ResourceNameFilter "o"
      04                    # PatternTypeFilter PREFIXED (v1+)
      ff ff                 # PrincipalFilter null
      00 01 2a              # HostFilter "*"
      03                    # Operation READ
      03                    # PermissionType ALLOW
    `);
    const request = { ...FILTER, resourceNameFilter: 'o' };
    expect(encodeRequest(DescribeAclsApi, 1, request)).toStrictEqual(bytes);
    expect(decodeRequest(DescribeAclsApi, 1, bytes)).toStrictEqual(request);
  });

  it('CreateAcls v1 request and response', () => {
    const request: CreateAclsRequest = { creations: [{ resourceType: 3, resourceName: 'g', resourcePatternType: 3, principal: 'User:a', host: '*', operation: 3, permissionType: 3 }] };
    const bytes = hex(`
      00 00 00 01                        # Creations: 1
      03 | 00 01 67 | 03                 #   GROUP "g" LITERAL
      00 06 55 73 65 72 3a 61            #   Principal "User:a"
      00 01 2a | 03 | 03                 #   Host "*", READ, ALLOW
    `);
    expect(encodeRequest(CreateAclsApi, 1, request)).toStrictEqual(bytes);
    expect(decodeRequest(CreateAclsApi, 1, bytes)).toStrictEqual(request);
    const response: CreateAclsResponse = { throttleTimeMs: 0, results: [{ errorCode: 54, errorMessage: null }] };
    expect(encodeResponse(CreateAclsApi, 1, response)).toStrictEqual(hex('00000000 | 00000001 | 0036 | ffff'));
    expect(decodeResponse(CreateAclsApi, 1, hex('00000000 | 00000001 | 0036 | ffff'))).toStrictEqual(response);
  });

  it('DeleteAcls v0 response: matching ACLs without a pattern type', () => {
    const response: DeleteAclsResponse = {
      throttleTimeMs: 0,
      filterResults: [{ errorCode: 0, errorMessage: null, matchingAcls: [{ errorCode: 0, errorMessage: null, resourceType: 2, resourceName: 't', patternType: 3, principal: 'User:a', host: '*', operation: 4, permissionType: 3 }] }],
    };
    const bytes = hex(`
      00000000 | 00000001              # ThrottleTimeMs, FilterResults: 1
      0000 ffff | 00000001             #   no error, MatchingAcls: 1
      0000 ffff | 02 | 0001 74         #     no error, TOPIC "t"
      0006 557365723a61 | 0001 2a      #     "User:a", "*"
      04 | 03                          #     WRITE, ALLOW
    `);
    expect(encodeResponse(DeleteAclsApi, 0, response)).toStrictEqual(bytes);
    expect(decodeResponse(DeleteAclsApi, 0, bytes)).toStrictEqual(response);
  });
});

truncationTests(DescribeAclsApi, FILTER, DESCRIBED);
truncationTests(CreateAclsApi, CREATE, CREATED);
truncationTests(DeleteAclsApi, DELETE, DELETED);
