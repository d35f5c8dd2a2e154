import { describe, expect, it } from 'vitest';
import {
  AlterConfigsApi,
  ApiVersionsApi,
  CreateAclsApi,
  CreatePartitionsApi,
  CreateTopicsApi,
  DeleteAclsApi,
  DeleteGroupsApi,
  DeleteRecordsApi,
  DeleteTopicsApi,
  DescribeAclsApi,
  DescribeConfigsApi,
  DescribeGroupsApi,
  FetchApi,
  FindCoordinatorApi,
  HeartbeatApi,
  IncrementalAlterConfigsApi,
  InitProducerIdApi,
  JoinGroupApi,
  LeaveGroupApi,
  ListGroupsApi,
  ListOffsetsApi,
  MetadataApi,
  OffsetCommitApi,
  OffsetFetchApi,
  OffsetForLeaderEpochApi,
  ProduceApi,
  SaslAuthenticateApi,
  SaslHandshakeApi,
  SyncGroupApi,
  SUPPORTED_APIS,
  SUPPORTED_API_VERSIONS,
  findApi,
  isSupportedVersion,
} from '../../../../src/protocol/apis/index.js';
import { isFlexibleVersion, type Field, type FieldType } from '../../../../src/protocol/schema.js';

describe('SUPPORTED_APIS', () => {
  it('is the advertised table of kafka-protocol.md §1, in api-key order', () => {
    expect(SUPPORTED_API_VERSIONS).toStrictEqual([
      { apiKey: 0, minVersion: 0, maxVersion: 8 },
      { apiKey: 1, minVersion: 4, maxVersion: 11 },
      { apiKey: 2, minVersion: 1, maxVersion: 5 },
      { apiKey: 3, minVersion: 0, maxVersion: 9 },
      { apiKey: 8, minVersion: 2, maxVersion: 7 },
      { apiKey: 9, minVersion: 1, maxVersion: 5 },
      { apiKey: 10, minVersion: 0, maxVersion: 2 },
      { apiKey: 11, minVersion: 0, maxVersion: 5 },
      { apiKey: 12, minVersion: 0, maxVersion: 3 },
      { apiKey: 13, minVersion: 0, maxVersion: 3 },
      { apiKey: 14, minVersion: 0, maxVersion: 3 },
      { apiKey: 15, minVersion: 0, maxVersion: 4 },
      { apiKey: 16, minVersion: 0, maxVersion: 2 },
      { apiKey: 17, minVersion: 0, maxVersion: 1 },
      { apiKey: 18, minVersion: 0, maxVersion: 2 },
      { apiKey: 19, minVersion: 0, maxVersion: 4 },
      { apiKey: 20, minVersion: 0, maxVersion: 3 },
      { apiKey: 21, minVersion: 0, maxVersion: 1 },
      { apiKey: 22, minVersion: 0, maxVersion: 1 },
      { apiKey: 23, minVersion: 0, maxVersion: 3 },
      { apiKey: 29, minVersion: 0, maxVersion: 1 },
      { apiKey: 30, minVersion: 0, maxVersion: 1 },
      { apiKey: 31, minVersion: 0, maxVersion: 1 },
      { apiKey: 32, minVersion: 1, maxVersion: 3 },
      { apiKey: 33, minVersion: 0, maxVersion: 1 },
      { apiKey: 36, minVersion: 0, maxVersion: 1 },
      { apiKey: 37, minVersion: 0, maxVersion: 1 },
      { apiKey: 42, minVersion: 0, maxVersion: 1 },
      { apiKey: 44, minVersion: 0, maxVersion: 0 },
    ]);
    expect(SUPPORTED_APIS).toStrictEqual([
      ProduceApi,
      FetchApi,
      ListOffsetsApi,
      MetadataApi,
      OffsetCommitApi,
      OffsetFetchApi,
      FindCoordinatorApi,
      JoinGroupApi,
      HeartbeatApi,
      LeaveGroupApi,
      SyncGroupApi,
      DescribeGroupsApi,
      ListGroupsApi,
      SaslHandshakeApi,
      ApiVersionsApi,
      CreateTopicsApi,
      DeleteTopicsApi,
      DeleteRecordsApi,
      InitProducerIdApi,
      OffsetForLeaderEpochApi,
      DescribeAclsApi,
      CreateAclsApi,
      DeleteAclsApi,
      DescribeConfigsApi,
      AlterConfigsApi,
      SaslAuthenticateApi,
      CreatePartitionsApi,
      DeleteGroupsApi,
      IncrementalAlterConfigsApi,
    ]);
    const keys = SUPPORTED_APIS.map((api) => api.apiKey);
    expect(keys).toStrictEqual([...keys].sort((a, b) => a - b));
  });

  it('finds an API by key and checks versions against its range', () => {
    expect(findApi(1)).toBe(FetchApi);
    expect(findApi(18)).toBe(ApiVersionsApi);
    expect(findApi(10)).toBe(FindCoordinatorApi);
    expect(findApi(11)).toBe(JoinGroupApi);
    expect(findApi(8)).toBe(OffsetCommitApi);
    expect(findApi(42)).toBe(DeleteGroupsApi);
    expect(findApi(17)).toBe(SaslHandshakeApi);
    expect(findApi(21)).toBe(DeleteRecordsApi);
    expect(isSupportedVersion(21, 1)).toBe(true);
    expect(isSupportedVersion(21, 2)).toBe(false);
    expect(isSupportedVersion(8, 1)).toBe(false);
    expect(isSupportedVersion(8, 2)).toBe(true);
    expect(isSupportedVersion(8, 7)).toBe(true);
    expect(isSupportedVersion(8, 8)).toBe(false);
    expect(isSupportedVersion(9, 0)).toBe(false);
    expect(isSupportedVersion(9, 5)).toBe(true);
    expect(isSupportedVersion(11, 5)).toBe(true);
    expect(isSupportedVersion(11, 6)).toBe(false);
    expect(isSupportedVersion(15, 4)).toBe(true);
    expect(isSupportedVersion(15, 5)).toBe(false);
    expect(isSupportedVersion(42, 2)).toBe(false);
    expect(findApi(22)).toBe(InitProducerIdApi);
    expect(isSupportedVersion(22, 1)).toBe(true);
    expect(isSupportedVersion(22, 2)).toBe(false);
    expect(findApi(23)).toBe(OffsetForLeaderEpochApi);
    expect(isSupportedVersion(23, 0)).toBe(true);
    expect(isSupportedVersion(23, 3)).toBe(true);
    expect(isSupportedVersion(23, 4)).toBe(false);
    expect(isSupportedVersion(1, 3)).toBe(false);
    expect(isSupportedVersion(1, 4)).toBe(true);
    expect(isSupportedVersion(1, 11)).toBe(true);
    expect(isSupportedVersion(1, 12)).toBe(false);
    expect(isSupportedVersion(18, 3)).toBe(false);
    expect(isSupportedVersion(2, 0)).toBe(false);
    expect(isSupportedVersion(3, 9)).toBe(true);
    expect(isSupportedVersion(3, 10)).toBe(false);
    expect(isSupportedVersion(99, 0)).toBe(false);
  });

  it('serves a flexible version only where a client needs one: Metadata v9 (ARCHITECTURE decision 9)', () => {
    const flexible = SUPPORTED_APIS.flatMap((api) => Array.from({ length: api.maxVersion - api.minVersion + 1 }, (_, i) => api.minVersion + i).filter((v) => isFlexibleVersion(api, v)).map((v) => `${api.name} v${v}`));
    expect(flexible).toEqual(['Metadata v9']);
  });

  function structsOf(fields: readonly Field[]): (readonly Field[])[] {
    const nested = fields.flatMap((f) => {
      const type: FieldType = f.type;
      if (Array.isArray(type)) return structsOf(type as readonly Field[]);
      if (typeof type === 'object' && 'array' in type && Array.isArray(type.array)) return structsOf(type.array as readonly Field[]);
      return [];
    });
    return [fields, ...nested];
  }

  for (const api of SUPPORTED_APIS) {
    it(`${api.name}: every field exists in some served version and no struct repeats a key`, () => {
      for (const fields of [...structsOf(api.request), ...structsOf(api.response)]) {
        const keys = fields.map((f) => f.key);
        expect(new Set(keys).size).toBe(keys.length);
        for (const f of fields) {
          expect(f.versions.min <= api.maxVersion && f.versions.max >= api.minVersion, `${api.name}.${f.name}`).toBe(true);
        }
      }
    });
  }
});

describe('WireWriter growth', () => {
  it('keeps every byte when a message outgrows its first chunk', async () => {
    const { WireWriter, WireReader } = await import('../../../../src/protocol/wire.js');
    const writer = new WireWriter(8);
    const text = 'x'.repeat(300);
    const bytes = Buffer.alloc(1000, 7);
    writer.int32(1).nullableString(text).int64(5n).nullableBytes(bytes).int16(-2);
    const reader = new WireReader(writer.toBuffer());
    expect([reader.int32(), reader.string(), reader.int64(), reader.bytesValue().equals(bytes), reader.int16(), reader.remaining()]).toEqual([1, text, 5n, true, -2, 0]);
  });
});
