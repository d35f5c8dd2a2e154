/**
 * The Parquet side: the footer the writer leaves (field ids in Iceberg's order, logical types,
 * codecs, statistics, sizes, key-value metadata, nothing from the clock), row groups closed by
 * bytes whatever store the rows wait in, values Parquet holds that the old writer refused, the
 * Avro schemas that have no Parquet form (refused with the field named) and damaged files.
 * Readers other than ours (DuckDB, parquet-mr) are in test/compat.
 */
import { parquetMetadata } from 'hyparquet';
import type { FileMetaData, SchemaElement } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it, vi } from 'vitest';
import { decodeDataFile, encodeDataFile, openDataFileWriter, parseDataFileSchema, type DataFileCodec } from '../../../src/etl/files/data-files.js';
import { workerEncoder } from '../../../src/etl/files/parquet-encoder.js';
import { CREATED_BY, type RowStore } from '../../../src/etl/files/parquet-file.js';
import { allTypesRecords, allTypesSchema } from './data-files-fixture.js';

vi.setConfig({ testTimeout: 30_000 });

const schema = allTypesSchema();
const records = allTypesRecords(200);

const footerOf = (bytes: Buffer): FileMetaData => parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
const encode = (codec: DataFileCodec, metadata: Record<string, string> = {}): Promise<Buffer> =>
  encodeDataFile(records, { format: 'parquet', codec, schema, identity: 'views+0+0+203', metadata });
const recordOf = (fields: unknown[]) => parseDataFileSchema({ type: 'record', name: 'tributary.test.R', fields });

describe('Parquet footer', () => {
  it("has PAR1 at both ends, created_by a constant, parquet.avro.schema then the caller's keys sorted", async () => {
    const bytes = await encode('snappy', { 'z.last': '1', 'tributary.offsets': '0-203' });
    expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
    expect(bytes.subarray(-4).toString()).toBe('PAR1');
    const footer = footerOf(bytes);
    expect(footer.created_by).toBe(CREATED_BY);
    expect(footer.num_rows).toBe(BigInt(records.length));
    expect((footer.key_value_metadata ?? []).map(({ key }) => key)).toEqual(['parquet.avro.schema', 'tributary.offsets', 'z.last']);
    expect(JSON.parse(footer.key_value_metadata?.[0]?.value ?? '')).toEqual(schema.schema({ exportAttrs: true }));
  });

  it.each([
    ['null', 'UNCOMPRESSED'],
    ['snappy', 'SNAPPY'],
    ['gzip', 'GZIP'],
    ['zstd', 'ZSTD'],
  ] as const)('codec %s: every column chunk says so, carries statistics with a null count, and sizes that add up', async (codec, expected) => {
    const bytes = await encode(codec);
    const footer = footerOf(bytes);
    const columns = footer.row_groups.flatMap((group) => group.columns);
    expect(columns.length).toBeGreaterThan(20);
    for (const { meta_data: meta } of columns) {
      expect(meta?.codec).toBe(expected);
      expect(meta?.statistics?.null_count).toBeTypeOf('bigint');
      if (codec === 'null') expect(meta?.total_uncompressed_size).toBe(meta?.total_compressed_size);
    }
    const compressed = columns.reduce((sum, column) => sum + Number(column.meta_data?.total_compressed_size), 0);
    const uncompressed = columns.reduce((sum, column) => sum + Number(column.meta_data?.total_uncompressed_size), 0);
    expect(compressed).toBeLessThan(bytes.length);
    expect(footer.row_groups.reduce((sum, group) => sum + Number(group.total_compressed_size), 0)).toBe(compressed);
    if (codec !== 'null') expect(uncompressed).toBeGreaterThan(compressed);
  });

  it('lays out lists, maps, optionals, enums, fixed and logical types as parquet-avro does', async () => {
    const elements = footerOf(await encode('null')).schema;
    const element = (name: string): SchemaElement | undefined => elements.find((candidate) => candidate.name === name);
    expect(element('at')).toMatchObject({ type: 'INT64', repetition_type: 'REQUIRED', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' } });
    expect(element('day')).toMatchObject({ type: 'INT32', converted_type: 'DATE' });
    expect(element('clock')).toMatchObject({ type: 'INT32', logical_type: { type: 'TIME', isAdjustedToUTC: false, unit: 'MILLIS' } });
    expect(element('kind')).toMatchObject({ type: 'BYTE_ARRAY', converted_type: 'UTF8' });
    expect(element('digest')).toMatchObject({ type: 'FIXED_LEN_BYTE_ARRAY', type_length: 4 });
    expect(element('note')).toMatchObject({ converted_type: 'UTF8', repetition_type: 'OPTIONAL' });
    expect(element('amount')).toMatchObject({ repetition_type: 'OPTIONAL' });
    const tags = elements.findIndex((candidate) => candidate.name === 'tags');
    expect(elements.slice(tags, tags + 3)).toMatchObject([
      { name: 'tags', converted_type: 'LIST', repetition_type: 'REQUIRED', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
    ]);
    const scores = elements.findIndex((candidate) => candidate.name === 'scores');
    expect(elements.slice(scores, scores + 4)).toMatchObject([
      { name: 'scores', converted_type: 'MAP', num_children: 1 },
      { name: 'key_value', repetition_type: 'REPEATED', num_children: 2 },
      { name: 'key', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
      { name: 'value', repetition_type: 'REQUIRED' },
    ]);
    const maybeNumbers = elements.findIndex((candidate) => candidate.name === 'maybeNumbers');
    expect(elements.slice(maybeNumbers, maybeNumbers + 3)).toMatchObject([
      { name: 'maybeNumbers', converted_type: 'LIST', repetition_type: 'OPTIONAL' },
      { name: 'list', repetition_type: 'REPEATED' },
      { name: 'element', repetition_type: 'OPTIONAL' },
    ]);
  });

  it("numbers every field, element, key and value as Iceberg numbers a new table's columns", async () => {
    const type = recordOf([
      { name: 'a', type: 'long' },
      { name: 'b', type: { type: 'record', name: 'B', fields: [{ name: 'c', type: 'string' }, { name: 'd', type: ['null', 'int'] }] } },
      { name: 'e', type: { type: 'array', items: 'int' } },
      { name: 'f', type: { type: 'map', values: { type: 'array', items: 'string' } } },
    ]);
    const bytes = await encodeDataFile([{ a: 1, b: { c: 'x', d: null }, e: [1], f: { k: ['v'] } }], { format: 'parquet', codec: 'null', schema: type, identity: 'x' });
    const ids = footerOf(bytes)
      .schema.filter((element) => element.name !== 'root' && element.repetition_type !== 'REPEATED')
      .map((element) => `${element.name}=${element.field_id}`);
    // Iceberg's TypeUtil.assignFreshIds: a struct's fields first, then what each contains.
    expect(ids).toEqual(['a=1', 'b=2', 'c=5', 'd=6', 'e=3', 'element=7', 'f=4', 'key=8', 'value=9', 'element=10']);
  });

  it('writes statistics a reader can prune by: min and max of the values, nulls counted', async () => {
    const type = recordOf([
      { name: 'n', type: 'long' },
      { name: 's', type: ['null', 'string'] },
      { name: 't', type: { type: 'long', logicalType: 'timestamp-millis' } },
    ]);
    const written = [
      { n: -5, s: 'é', t: Date.UTC(2026, 0, 1) },
      { n: 7, s: null, t: Date.UTC(1969, 11, 31) },
      { n: 0, s: 'Z', t: Date.UTC(2026, 0, 2) },
    ];
    const footer = footerOf(await encodeDataFile(written, { format: 'parquet', codec: 'zstd', schema: type, identity: 'x' }));
    const stats = Object.fromEntries(footer.row_groups[0]!.columns.map((column) => [column.meta_data!.path_in_schema.join('.'), column.meta_data!.statistics]));
    expect(stats['n']).toMatchObject({ min_value: -5n, max_value: 7n, null_count: 0n });
    // Strings by their UTF-8 bytes: "Z" (5a) before "é" (c3 a9).
    expect(stats['s']).toMatchObject({ min_value: 'Z', max_value: 'é', null_count: 1n });
    expect(stats['t']?.min_value).toEqual(new Date(Date.UTC(1969, 11, 31)));
    expect(stats['t']?.max_value).toEqual(new Date(Date.UTC(2026, 0, 2)));
  });

  it('uses a dictionary for a column that repeats and plain pages for one that does not', async () => {
    const type = recordOf([{ name: 'city', type: 'string' }, { name: 'id', type: 'string' }]);
    const written = Array.from({ length: 5000 }, (_, index) => ({ city: ['Zürich', 'Kraków', '東京'][index % 3]!, id: `id-${index}-${(index * 7919) % 5003}` }));
    const footer = footerOf(await encodeDataFile(written, { format: 'parquet', codec: 'snappy', schema: type, identity: 'x' }));
    const [city, id] = footer.row_groups[0]!.columns.map((column) => column.meta_data!);
    expect(city?.dictionary_page_offset).toBeTypeOf('bigint');
    expect(city?.encodings).toContain('RLE_DICTIONARY');
    expect(id?.dictionary_page_offset).toBeUndefined();
    expect(id?.encodings).not.toContain('RLE_DICTIONARY');
  });
});

describe('row groups', () => {
  const type = recordOf([
    { name: 'n', type: 'long' },
    { name: 's', type: 'string' },
  ]);
  const many = Array.from({ length: 20_000 }, (_, index) => ({ n: index, s: `row ${index} ${'x'.repeat(index % 50)}` }));

  it('close when their rows reach rowGroupBytes, and the same rows give the same bytes whatever store they wait in', async () => {
    const options = { format: 'parquet' as const, codec: 'zstd' as const, schema: type, identity: 'x', rowGroupBytes: 64 * 1024 };
    const inMemory = await encodeDataFile(many, options);
    const footer = footerOf(inMemory);
    expect(footer.row_groups.length).toBeGreaterThan(5);
    expect(footer.row_groups.reduce((sum, group) => sum + Number(group.num_rows), 0)).toBe(many.length);
    // A store that hands its bytes back in odd pieces, as one read from a spill file does.
    const stores: string[] = [];
    const chunked = (): RowStore => {
      const parts: Buffer[] = [];
      stores.push('opened');
      return {
        write: (chunk) => void parts.push(chunk),
        chunks: async function* () {
          const all = Buffer.concat(parts);
          for (let at = 0; at < all.length; at += 1000) yield all.subarray(at, at + 1000);
        },
        dispose: () => Promise.resolve(),
      };
    };
    const chunks: Buffer[] = [];
    const writer = openDataFileWriter({ ...options, rowStore: chunked }, (chunk) => chunks.push(chunk));
    for (const record of many) await writer.append(record);
    await writer.finish({});
    expect(Buffer.concat(chunks).equals(inMemory)).toBe(true);
    expect(stores.length).toBe(footer.row_groups.length + 1);
    expect((await decodeDataFile(inMemory, 'parquet')).records).toEqual(many);
  });
});

describe('the encoder thread', () => {
  it('writes the same bytes as the calling thread, and reports a bad value the same way', async () => {
    const options = { format: 'parquet' as const, codec: 'zstd' as const, schema, identity: 'x', rowGroupBytes: 64 * 1024 };
    const many = allTypesRecords(3000);
    const inline = await encodeDataFile(many, options);
    const chunks: Buffer[] = [];
    const writer = openDataFileWriter({ ...options, encoder: workerEncoder(1024 * 1024) }, (chunk) => chunks.push(chunk));
    for (const record of many) await writer.append(record);
    await writer.finish({});
    expect(footerOf(inline).row_groups.length).toBeGreaterThan(1);
    expect(Buffer.concat(chunks).equals(inline)).toBe(true);
    const uuid = recordOf([{ name: 'id', type: { type: 'string', logicalType: 'uuid' } }]);
    const bad = openDataFileWriter({ format: 'parquet', codec: 'null', schema: uuid, identity: 'x', encoder: workerEncoder(1024 * 1024) }, () => undefined);
    await bad.append({ id: '0b5e1f7a-2c3d-4e5f-8a9b-0c1d2e3f4a5b' });
    await bad.append({ id: 'nope' });
    await expect(bad.finish({})).rejects.toMatchObject({ code: 'DATA_FILE_RECORD_INVALID', details: { field: 'id', record: 1 } });
  });
});

describe('values Parquet holds', () => {
  it.each([
    ['NaN and infinities in an optional float in an array', recordOf([{ name: 'xs', type: { type: 'array', items: ['null', 'float'] } }]), { xs: [1, null, Number.NaN, -Infinity] }],
    ['a timestamp before 1970', recordOf([{ name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } }]), { at: -1 }],
    ['a date before 1970', recordOf([{ name: 'day', type: { type: 'int', logicalType: 'date' } }]), { day: -3 }],
    ['timestamp-micros', recordOf([{ name: 'micros', type: { type: 'long', logicalType: 'timestamp-micros' } }]), { micros: 1_700_000_000_123_456 }],
    ['decimal on bytes', recordOf([{ name: 'money', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } }]), { money: Buffer.from([0xff, 0x38]) }],
    ['a uuid', recordOf([{ name: 'id', type: { type: 'string', logicalType: 'uuid' } }]), { id: '0b5e1f7a-2c3d-4e5f-8a9b-0c1d2e3f4a5b' }],
  ])('%s', async (_what, type, value) => {
    const decoded = await decodeDataFile(await encodeDataFile([value], { format: 'parquet', codec: 'snappy', schema: type, identity: 'x' }), 'parquet');
    expect(decoded.records).toEqual([value]);
  });

  it('a uuid field holding something else is DATA_FILE_RECORD_INVALID, naming the field', async () => {
    const type = recordOf([{ name: 'id', type: { type: 'string', logicalType: 'uuid' } }]);
    await expect(encodeDataFile([{ id: 'not-a-uuid' }], { format: 'parquet', codec: 'null', schema: type, identity: 'x' })).rejects.toMatchObject({
      code: 'DATA_FILE_RECORD_INVALID',
      message: expect.stringContaining('field id holds "not-a-uuid", which is not a UUID') as unknown,
      details: { field: 'id' },
    });
  });
});

describe('Avro schemas without a Parquet form are DATA_FILE_SCHEMA_UNSUPPORTED, naming the field', () => {
  it.each([
    ['a union of two non-null types', recordOf([{ name: 'inner', type: { type: 'record', name: 'Inner', fields: [{ name: 'either', type: ['int', 'string'] }] } }]), 'inner.either', /is the union \["int","string"\]; Parquet holds only \["null", T\] unions/],
    ['a union of null and two types', recordOf([{ name: 'three', type: ['null', 'int', 'string'] }]), 'three', /is the union/],
    ['a union inside an array', recordOf([{ name: 'list', type: { type: 'array', items: ['null', 'int', 'string'] } }]), 'list[]', /is the union/],
    ['null alone', recordOf([{ name: 'nothing', type: 'null' }]), 'nothing', /is null alone/],
    ['a recursive record', recordOf([{ name: 'next', type: ['null', 'tributary.test.R'] }]), 'next', /refers back to its enclosing record tributary.test.R/],
    ['an empty record', recordOf([{ name: 'empty', type: { type: 'record', name: 'Empty', fields: [] } }]), 'empty', /without fields; Parquet has no empty groups/],
    ['a top-level non-record', parseDataFileSchema('"string"'), '(top level)', /a Parquet file holds records/],
  ])('%s', async (_what, type, field, message) => {
    await expect(encodeDataFile([], { format: 'parquet', codec: 'null', schema: type, identity: 'x' })).rejects.toMatchObject({
      code: 'DATA_FILE_SCHEMA_UNSUPPORTED',
      message: expect.stringMatching(message) as unknown,
      details: { field },
    });
  });

  it('the same schemas are fine in Avro', async () => {
    const either = recordOf([{ name: 'either', type: ['int', 'string'] }]);
    const written = [{ either: 'text' }, { either: 3 }];
    const decoded = await decodeDataFile(await encodeDataFile(written, { format: 'avro', codec: 'deflate', schema: either, identity: 'x' }), 'avro');
    expect(decoded.records).toEqual(written);
  });
});

describe('damaged Parquet files are DATA_FILE_CORRUPT', () => {
  it('bytes that are not Parquet', async () => {
    await expect(decodeDataFile(Buffer.from('Obj\x01 certainly not parquet'), 'parquet')).rejects.toMatchObject({
      code: 'DATA_FILE_CORRUPT',
      message: expect.stringContaining('Parquet file cannot be read') as unknown,
    });
  });

  it('a file cut short', async () => {
    const bytes = await encode('snappy');
    await expect(decodeDataFile(bytes.subarray(0, bytes.length - 10), 'parquet')).rejects.toMatchObject({ code: 'DATA_FILE_CORRUPT' });
  });

  it('a Parquet file without an Avro schema', async () => {
    const plain = Buffer.from(parquetWriteBuffer({ columnData: [{ name: 'n', data: [1], type: 'INT32' }] }));
    await expect(decodeDataFile(plain, 'parquet')).rejects.toMatchObject({
      code: 'DATA_FILE_CORRUPT',
      message: 'Parquet file has no parquet.avro.schema in its metadata, so the Avro records it holds are unknown',
    });
  });
});
