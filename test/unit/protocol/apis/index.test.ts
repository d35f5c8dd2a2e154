import { describe, expect, it } from 'vitest';
import {
  ApiVersionsApi,
  CreatePartitionsApi,
  CreateTopicsApi,
  DeleteTopicsApi,
  FetchApi,
  FindCoordinatorApi,
  InitProducerIdApi,
  ListOffsetsApi,
  MetadataApi,
  ProduceApi,
  SUPPORTED_APIS,
  SUPPORTED_API_VERSIONS,
  findApi,
  isSupportedVersion,
} from '../../../../src/protocol/apis/index.js';
import type { Field, FieldType } from '../../../../src/protocol/schema.js';

describe('SUPPORTED_APIS', () => {
  it('is the advertised table of kafka-protocol.md §1, in api-key order', () => {
    expect(SUPPORTED_API_VERSIONS).toStrictEqual([
      { apiKey: 0, minVersion: 0, maxVersion: 8 },
      { apiKey: 1, minVersion: 4, maxVersion: 11 },
      { apiKey: 2, minVersion: 1, maxVersion: 5 },
      { apiKey: 3, minVersion: 0, maxVersion: 8 },
      { apiKey: 10, minVersion: 0, maxVersion: 2 },
      { apiKey: 18, minVersion: 0, maxVersion: 2 },
      { apiKey: 19, minVersion: 0, maxVersion: 4 },
      { apiKey: 20, minVersion: 0, maxVersion: 3 },
      { apiKey: 22, minVersion: 0, maxVersion: 1 },
      { apiKey: 37, minVersion: 0, maxVersion: 1 },
    ]);
    expect(SUPPORTED_APIS).toStrictEqual([ProduceApi, FetchApi, ListOffsetsApi, MetadataApi, FindCoordinatorApi, ApiVersionsApi, CreateTopicsApi, DeleteTopicsApi, InitProducerIdApi, CreatePartitionsApi]);
  });

  it('finds an API by key and checks versions against its range', () => {
    expect(findApi(1)).toBe(FetchApi);
    expect(findApi(18)).toBe(ApiVersionsApi);
    expect(findApi(10)).toBe(FindCoordinatorApi);
    expect(findApi(11)).toBeUndefined();
    expect(findApi(22)).toBe(InitProducerIdApi);
    expect(isSupportedVersion(22, 1)).toBe(true);
    expect(isSupportedVersion(22, 2)).toBe(false);
    expect(isSupportedVersion(1, 3)).toBe(false);
    expect(isSupportedVersion(1, 4)).toBe(true);
    expect(isSupportedVersion(1, 11)).toBe(true);
    expect(isSupportedVersion(1, 12)).toBe(false);
    expect(isSupportedVersion(18, 3)).toBe(false);
    expect(isSupportedVersion(2, 0)).toBe(false);
    expect(isSupportedVersion(99, 0)).toBe(false);
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
